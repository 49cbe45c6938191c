package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.DescriptorList;
import java.util.Arrays;
import java.util.Locale;

/**
 * A reusable buffer of resolved copies {@code (local address, remote address, length)}: what a
 * request's index pairs mean in memory, optionally coalesced. Coalescing merges consecutive pairs
 * that are contiguous on both sides into one, so the number of copies follows contiguity rather
 * than the number of blocks; it never changes which bytes move where.
 *
 * <p>The planner fills it from descriptor lists ({@link #resolve}); a transport fills it pair by
 * pair ({@link #add}), usually through {@link PostChecks#resolve}, with the memory region each side
 * lies in, so that a merged copy never spans two registrations that merely happen to be adjacent.
 * Each copy keeps its two region ids, which is how a network transport finds the memory handle and
 * remote key of one operation.
 *
 * <p>Kept in primitive arrays that grow only when a request needs more room than any before it,
 * so steady-state use allocates nothing. Not thread-safe: one buffer per thread.
 */
public final class DescriptorPairs
{
    private long[] localAddresses;
    private long[] remoteAddresses;
    private long[] lengths;
    private int[] localRegions;
    private int[] remoteRegions;
    private int size;
    // regions of the last copy: the next pair merges into it only within the same regions
    private int lastLocalRegion;
    private int lastRemoteRegion;

    /**
     * Creates an empty buffer.
     *
     * @param initialCapacity pairs to make room for; non-negative.
     */
    public DescriptorPairs(int initialCapacity)
    {
        if (initialCapacity < 0) {
            throw invalid("initialCapacity=%d is negative", initialCapacity);
        }
        localAddresses = new long[initialCapacity];
        remoteAddresses = new long[initialCapacity];
        lengths = new long[initialCapacity];
        localRegions = new int[initialCapacity];
        remoteRegions = new int[initialCapacity];
    }

    /**
     * Replaces the content with the copies that index pairs describe.
     *
     * @param local the local list the indices address.
     * @param localIndices local indices; untrusted, checked against {@code local}.
     * @param remote the remote list the indices address.
     * @param remoteIndices remote indices; untrusted, checked against {@code remote}.
     * @param count number of pairs.
     * @param coalesce whether to merge pairs contiguous on both sides.
     * @return the number of copies now held.
     * @throws KvBridgeException {@code INDEX_OUT_OF_RANGE} for an index outside its list,
     *     {@code LENGTH_MISMATCH} for paired descriptors of different lengths.
     */
    public int resolve(DescriptorList local, int[] localIndices, DescriptorList remote, int[] remoteIndices, int count, boolean coalesce)
    {
        requireNonNull(local, "local is null");
        requireNonNull(remote, "remote is null");
        requireNonNull(localIndices, "localIndices is null");
        requireNonNull(remoteIndices, "remoteIndices is null");
        if (count < 0 || count > localIndices.length || count > remoteIndices.length) {
            throw invalid("count=%d exceeds localIndices.length=%d or remoteIndices.length=%d",
                    count, localIndices.length, remoteIndices.length);
        }
        clear(count);
        for (int i = 0; i < count; i++) {
            int l = localIndices[i];
            int r = remoteIndices[i];
            if (l < 0 || l >= local.size() || r < 0 || r >= remote.size()) {
                throw failure(ErrorCode.INDEX_OUT_OF_RANGE, "pair %d: local index=%d (list size=%d) or remote index=%d (list size=%d) is out of range", i, l, local.size(), r, remote.size());
            }
            long length = local.length(l);
            if (length != remote.length(r)) {
                throw failure(ErrorCode.LENGTH_MISMATCH, "pair %d: local descriptor %d has length=%d but remote descriptor %d has length=%d", i, l, length, r, remote.length(r));
            }
            // descriptor lists carry no registrations: every descriptor counts as one region
            add(local.address(l), 0, remote.address(r), 0, length, coalesce);
        }
        return size;
    }

    /**
     * Empties the buffer and makes room for a number of pairs, so the {@link #add} calls that follow
     * allocate nothing.
     *
     * @param expectedPairs pairs about to be added; non-negative.
     */
    public void clear(int expectedPairs)
    {
        if (expectedPairs < 0) {
            throw invalid("expectedPairs=%d is negative", expectedPairs);
        }
        if (localAddresses.length < expectedPairs) {
            grow(expectedPairs);
        }
        size = 0;
    }

    /**
     * Appends the copy of one pair, whose ranges the caller has checked. With {@code coalesce} the
     * pair extends the last copy instead when it starts where that copy ends on both sides and lies
     * in the same region as that copy on each side.
     *
     * @param localAddress first local byte.
     * @param localRegion the local memory region (registration) holding the range, any id the caller
     *     keeps stable within one fill.
     * @param remoteAddress first remote byte.
     * @param remoteRegion the remote memory region holding the range.
     * @param length bytes, the same on both sides.
     * @param coalesce whether the pair may merge into the last copy.
     */
    public void add(long localAddress, int localRegion, long remoteAddress, int remoteRegion, long length, boolean coalesce)
    {
        if (coalesce && size > 0 && localRegion == lastLocalRegion && remoteRegion == lastRemoteRegion) {
            int last = size - 1;
            long end = lengths[last];
            if (localAddresses[last] + end == localAddress && remoteAddresses[last] + end == remoteAddress) {
                lengths[last] = end + length;
                return;
            }
        }
        if (size == localAddresses.length) {
            grow(Math.max(8, size * 2));
        }
        localAddresses[size] = localAddress;
        remoteAddresses[size] = remoteAddress;
        lengths[size] = length;
        localRegions[size] = localRegion;
        remoteRegions[size] = remoteRegion;
        lastLocalRegion = localRegion;
        lastRemoteRegion = remoteRegion;
        size++;
    }

    private void grow(int capacity)
    {
        localAddresses = Arrays.copyOf(localAddresses, capacity);
        remoteAddresses = Arrays.copyOf(remoteAddresses, capacity);
        lengths = Arrays.copyOf(lengths, capacity);
        localRegions = Arrays.copyOf(localRegions, capacity);
        remoteRegions = Arrays.copyOf(remoteRegions, capacity);
    }

    /**
     * Returns the number of copies held.
     *
     * @return the count from the last {@link #resolve}.
     */
    public int size()
    {
        return size;
    }

    /**
     * Returns a copy's local address.
     *
     * @param index in {@code [0, size())}.
     * @return the address.
     */
    public long localAddress(int index)
    {
        return localAddresses[checkIndex(index)];
    }

    /**
     * Returns a copy's remote address.
     *
     * @param index in {@code [0, size())}.
     * @return the address.
     */
    public long remoteAddress(int index)
    {
        return remoteAddresses[checkIndex(index)];
    }

    /**
     * Returns a copy's length.
     *
     * @param index in {@code [0, size())}.
     * @return the length in bytes.
     */
    public long length(int index)
    {
        return lengths[checkIndex(index)];
    }

    /**
     * Returns the local region id a copy lies in, as given to {@link #add}.
     *
     * @param index in {@code [0, size())}.
     * @return the region id.
     */
    public int localRegion(int index)
    {
        return localRegions[checkIndex(index)];
    }

    /**
     * Returns the remote region id a copy lies in, as given to {@link #add}.
     *
     * @param index in {@code [0, size())}.
     * @return the region id.
     */
    public int remoteRegion(int index)
    {
        return remoteRegions[checkIndex(index)];
    }

    /**
     * Returns the bytes all copies move.
     *
     * @return the sum of lengths.
     */
    public long totalBytes()
    {
        long total = 0;
        for (int i = 0; i < size; i++) {
            total += lengths[i];
        }
        return total;
    }

    // exceptions are built only once a check failed, so a passing check boxes nothing
    private static KvBridgeException invalid(String format, Object... args)
    {
        return failure(ErrorCode.INVALID_ARGUMENT, format, args);
    }

    private static KvBridgeException failure(ErrorCode code, String format, Object... args)
    {
        return new KvBridgeException(code, String.format(Locale.ROOT, format, args));
    }

    private int checkIndex(int index)
    {
        if (index < 0 || index >= size) {
            throw new IndexOutOfBoundsException("index=" + index + " size=" + size);
        }
        return index;
    }

    @Override
    public String toString()
    {
        StringBuilder text = new StringBuilder("DescriptorPairs[size=").append(size);
        for (int i = 0; i < Math.min(size, 8); i++) {
            text.append(i == 0 ? ": " : ", ").append(String.format(Locale.ROOT, "0x%x->0x%x %d", remoteAddresses[i], localAddresses[i], lengths[i]));
        }
        return text.append(size > 8 ? ", ...]" : "]").toString();
    }
}
