package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The allocations one transport instance registered, sorted by address in an array that is
 * replaced on every change and read without a lock, so finding the registration of a descriptor
 * is a binary search that allocates nothing.
 *
 * <p>Threads: changes are serialised by the instance's lock (or its owner thread); reads from any
 * thread see the last published array.
 *
 * @param <R> the transport's registration type.
 */
public final class Registrations<R extends Registration>
{
    private static final Registration[] NONE = new Registration[0];

    private final String owner;
    private final Object lock = new Object();
    private volatile Registration[] sorted = NONE;

    /**
     * Creates an empty set.
     *
     * @param owner names the instance in errors, such as {@code ucx transport 'a'}.
     */
    public Registrations(String owner)
    {
        this.owner = requireNonNull(owner, "owner is null");
    }

    /**
     * Checks that an allocation overlaps nothing registered, before the transport maps it natively.
     *
     * @param allocation to register.
     * @throws KvBridgeException {@code ALREADY_REGISTERED} naming the registration it overlaps.
     */
    public void checkFree(Allocation allocation)
    {
        for (Registration registration : sorted) {
            if (registration.allocation().overlaps(allocation)) {
                throw new KvBridgeException(ErrorCode.ALREADY_REGISTERED, allocation + " overlaps registered " + registration.allocation()
                        + " of " + owner + "; register each physical range once");
            }
        }
    }

    /**
     * Adds a registration.
     *
     * @param registration a new, live registration.
     * @throws KvBridgeException {@code ALREADY_REGISTERED} when it overlaps a registered one.
     */
    public void add(R registration)
    {
        requireNonNull(registration, "registration is null");
        synchronized (lock) {
            checkFree(registration.allocation());
            Registration[] current = sorted;
            Registration[] next = Arrays.copyOf(current, current.length + 1);
            next[current.length] = registration;
            Arrays.sort(next, (a, b) -> Long.compare(a.allocation().address(), b.allocation().address()));
            sorted = next;
        }
    }

    /**
     * Removes the registration of an allocation and marks it dead.
     *
     * @param allocation exactly as registered.
     * @return the removed registration, for the transport to unmap.
     * @throws KvBridgeException {@code NOT_REGISTERED} when it is not registered.
     */
    @SuppressWarnings("unchecked")
    public R remove(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        synchronized (lock) {
            Registration[] current = sorted;
            for (int i = 0; i < current.length; i++) {
                if (current[i].allocation().equals(allocation)) {
                    Registration removed = current[i];
                    Registration[] next = new Registration[current.length - 1];
                    System.arraycopy(current, 0, next, 0, i);
                    System.arraycopy(current, i + 1, next, i, current.length - i - 1);
                    sorted = next;
                    removed.retire();
                    return (R) removed;
                }
            }
        }
        throw new KvBridgeException(ErrorCode.NOT_REGISTERED, allocation + " is not registered with " + owner);
    }

    /**
     * Removes every registration and marks each dead.
     *
     * @return what was registered, for the transport to unmap.
     */
    @SuppressWarnings("unchecked")
    public List<R> clear()
    {
        synchronized (lock) {
            Registration[] current = sorted;
            sorted = NONE;
            List<R> removed = new ArrayList<>(current.length);
            for (Registration registration : current) {
                registration.retire();
                removed.add((R) registration);
            }
            return removed;
        }
    }

    /**
     * Finds the live registration holding a whole range of one kind and device.
     *
     * @param address start of the range.
     * @param length bytes in the range.
     * @param kind the range's memory kind.
     * @param device the range's device.
     * @return the registration, or null.
     */
    @SuppressWarnings("unchecked")
    public R find(long address, long length, MemoryKind kind, int device)
    {
        Registration[] current = sorted;
        int low = 0;
        int high = current.length - 1;
        while (low <= high) {
            int middle = (low + high) >>> 1;
            if (current[middle].allocation().address() <= address) {
                low = middle + 1;
            }
            else {
                high = middle - 1;
            }
        }
        if (high < 0) {
            return null;
        }
        Allocation candidate = current[high].allocation();
        return candidate.kind() == kind && candidate.device() == device && candidate.contains(address, length) ? (R) current[high] : null;
    }

    /**
     * Checks a copy between host memory and a registered allocation, as
     * {@link io.kvbridge.spi.transfer.TransferBackend#copyFromHost} and {@code copyToHost} must before
     * any byte moves.
     *
     * @param allocation the registered side, as the engine names it.
     * @param offset where the copy starts in it.
     * @param host the host side; its whole length is copied.
     * @return the registered address the copy starts at.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for a heap segment or a negative offset,
     *     {@code DESCRIPTOR_OUT_OF_RANGE} past the end of the allocation, {@code NOT_REGISTERED} when
     *     no live registration of this instance holds the range.
     */
    public long checkHostCopy(Allocation allocation, long offset, MemorySegment host)
    {
        requireNonNull(allocation, "allocation is null");
        requireNonNull(host, "host is null");
        KvBridgeException.checkArgument(host.isNative(), "the host segment is on the Java heap; copy through off-heap memory (the GC moves heap arrays)");
        KvBridgeException.checkArgument(offset >= 0, "offset=%d is negative", offset);
        long length = host.byteSize();
        if (length > allocation.bytes() - offset) {
            throw new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                    "a copy of %d bytes at offset=%d runs past the end of %s (%d bytes)", length, offset, allocation, allocation.bytes()));
        }
        long start = allocation.address() + offset;
        Registration registration = find(start, Math.max(1, length), allocation.kind(), allocation.device());
        if (registration == null || !registration.live()) {
            throw new KvBridgeException(ErrorCode.NOT_REGISTERED, String.format(Locale.ROOT,
                    "address=0x%x length=%d of %s lies in no allocation registered with %s; register or allocate it first", start, length, allocation, owner));
        }
        return start;
    }

    /**
     * Copies host memory into a registered allocation the process can address directly (host memory,
     * or device memory a transport backs with host memory), after {@link #checkHostCopy}: what
     * {@link io.kvbridge.spi.transfer.TransferBackend#copyFromHost} is for such a transport.
     *
     * @param source the host bytes; all of them are copied.
     * @param destination the registered allocation.
     * @param offset where the copy starts in it.
     * @throws KvBridgeException as {@link #checkHostCopy}, before any byte moves.
     */
    public void copyFromHost(MemorySegment source, Allocation destination, long offset)
    {
        long address = checkHostCopy(destination, offset, source);
        MemorySegment.ofAddress(address).reinterpret(source.byteSize()).copyFrom(source);
    }

    /**
     * Copies from a registered allocation the process can address directly into host memory, after
     * {@link #checkHostCopy}: what {@link io.kvbridge.spi.transfer.TransferBackend#copyToHost} is for
     * such a transport.
     *
     * @param source the registered allocation.
     * @param offset where the copy starts in it.
     * @param destination the host memory; it is filled whole.
     * @throws KvBridgeException as {@link #checkHostCopy}, before any byte moves.
     */
    public void copyToHost(Allocation source, long offset, MemorySegment destination)
    {
        long address = checkHostCopy(source, offset, destination);
        destination.copyFrom(MemorySegment.ofAddress(address).reinterpret(destination.byteSize()));
    }

    /**
     * Finds the registration of every descriptor of a list, as {@code prepareLocal} must before it
     * accepts the list.
     *
     * @param descriptors the list; every descriptor must lie inside one registration of its kind and device.
     * @return which registration each descriptor lies in.
     * @throws KvBridgeException {@code DESCRIPTOR_OUT_OF_RANGE} naming the first descriptor outside every registration.
     */
    public Coverage cover(DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        MemoryKind kind = descriptors.kind();
        int device = descriptors.device();
        RegionCover<Registration> cover = RegionCover.of(descriptors.addresses(), descriptors.lengths(), new RegionCover.Regions<>()
        {
            @Override
            public Registration find(long address, long length)
            {
                return Registrations.this.find(address, length, kind, device);
            }

            @Override
            public boolean contains(Registration registration, long address, long length)
            {
                return registration.allocation().contains(address, length);
            }
        }, (index, address, length) -> new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                "descriptor %d (address=0x%x, length=%d, %s device %d) lies outside every allocation registered with %s; register the memory first",
                index, address, length, kind, device, owner)));
        return new Coverage(cover.regionIds(), cover.regions().toArray(NONE));
    }

    /** {@return the registrations, sorted by address; a snapshot} */
    @SuppressWarnings("unchecked")
    public List<R> all()
    {
        List<R> all = new ArrayList<>();
        for (Registration registration : sorted) {
            all.add((R) registration);
        }
        return all;
    }

    /** {@return how many allocations are registered} */
    public int size()
    {
        return sorted.length;
    }
}
