package io.kvbridge.spi.transfer;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.memory.MemoryKind;
import java.util.Arrays;

/**
 * An immutable list of {@code (address, length)} descriptors of one memory kind on one device, kept
 * in two primitive arrays: never one object per descriptor, so lists of millions stay cheap.
 */
public final class DescriptorList
{
    private final MemoryKind kind;
    private final int device;
    private final long[] addresses;
    private final long[] lengths;
    private final int size;

    private DescriptorList(MemoryKind kind, int device, long[] addresses, long[] lengths, int size)
    {
        this.kind = requireNonNull(kind, "kind is null");
        this.device = device;
        this.addresses = addresses;
        this.lengths = lengths;
        this.size = size;
    }

    /**
     * Wraps arrays without copying them: the caller hands over ownership and must not change them.
     *
     * @param kind memory kind of every descriptor.
     * @param device device index (0 for host).
     * @param addresses descriptor addresses; at least {@code size} entries.
     * @param lengths descriptor lengths, each positive; at least {@code size} entries.
     * @param size number of descriptors.
     * @return the list.
     */
    public static DescriptorList wrap(MemoryKind kind, int device, long[] addresses, long[] lengths, int size)
    {
        requireNonNull(addresses, "addresses is null");
        requireNonNull(lengths, "lengths is null");
        checkArgument(size >= 0 && size <= addresses.length && size <= lengths.length,
                "size=%d exceeds addresses.length=%d or lengths.length=%d", size, addresses.length, lengths.length);
        checkArgument(device >= 0, "device=%d is negative", device);
        // plain comparisons first: formatting arguments are boxed only for a bad descriptor, so
        // checking a list of millions allocates nothing
        for (int i = 0; i < size; i++) {
            if (lengths[i] <= 0 || addresses[i] <= 0 || addresses[i] > Long.MAX_VALUE - lengths[i]) {
                checkArgument(lengths[i] > 0, "descriptor %d: length=%d is not positive", i, lengths[i]);
                checkArgument(false, "descriptor %d: address=0x%x length=%d is not a valid range", i, addresses[i], lengths[i]);
            }
        }
        return new DescriptorList(kind, device, addresses, lengths, size);
    }

    /**
     * Starts a list.
     *
     * @param kind memory kind of every descriptor.
     * @param device device index (0 for host).
     * @param expectedSize initial capacity.
     * @return a builder.
     */
    public static Builder builder(MemoryKind kind, int device, int expectedSize)
    {
        return new Builder(kind, device, expectedSize);
    }

    /** {@return the memory kind of every descriptor} */
    public MemoryKind kind()
    {
        return kind;
    }

    /** {@return the device index} */
    public int device()
    {
        return device;
    }

    /** {@return the number of descriptors} */
    public int size()
    {
        return size;
    }

    /**
     * Returns a descriptor's address.
     *
     * @param index in {@code [0, size())}.
     * @return the address.
     */
    public long address(int index)
    {
        return addresses[checkIndex(index)];
    }

    /**
     * Returns a descriptor's length.
     *
     * @param index in {@code [0, size())}.
     * @return the length in bytes.
     */
    public long length(int index)
    {
        return lengths[checkIndex(index)];
    }

    /** {@return the sum of all lengths} */
    public long totalBytes()
    {
        long total = 0;
        for (int i = 0; i < size; i++) {
            total += lengths[i];
        }
        return total;
    }

    /**
     * Copies the addresses.
     *
     * @return a new array of {@code size()} addresses.
     */
    public long[] addresses()
    {
        return Arrays.copyOf(addresses, size);
    }

    /**
     * Copies the lengths.
     *
     * @return a new array of {@code size()} lengths.
     */
    public long[] lengths()
    {
        return Arrays.copyOf(lengths, size);
    }

    private int checkIndex(int index)
    {
        if (index < 0 || index >= size) {
            throw new IndexOutOfBoundsException("index=" + index + " size=" + size);
        }
        return index;
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof DescriptorList other && kind == other.kind && device == other.device && size == other.size
                && Arrays.equals(addresses, 0, size, other.addresses, 0, size) && Arrays.equals(lengths, 0, size, other.lengths, 0, size);
    }

    @Override
    public int hashCode()
    {
        int hash = kind.hashCode() * 31 + device;
        for (int i = 0; i < size; i++) {
            hash = hash * 31 + Long.hashCode(addresses[i]);
            hash = hash * 31 + Long.hashCode(lengths[i]);
        }
        return hash;
    }

    @Override
    public String toString()
    {
        StringBuilder text = new StringBuilder("DescriptorList[").append(kind).append(" device=").append(device).append(" size=").append(size);
        for (int i = 0; i < Math.min(size, 8); i++) {
            text.append(i == 0 ? ": " : ", ").append(String.format(java.util.Locale.ROOT, "(0x%x, %d)", addresses[i], lengths[i]));
        }
        return text.append(size > 8 ? ", ...]" : "]").toString();
    }

    /** Collects descriptors into growing primitive arrays. */
    public static final class Builder
    {
        private final MemoryKind kind;
        private final int device;
        private long[] addresses;
        private long[] lengths;
        private int size;

        private Builder(MemoryKind kind, int device, int expectedSize)
        {
            this.kind = requireNonNull(kind, "kind is null");
            this.device = device;
            checkArgument(expectedSize >= 0, "expectedSize=%d is negative", expectedSize);
            this.addresses = new long[Math.max(expectedSize, 4)];
            this.lengths = new long[addresses.length];
        }

        /**
         * Appends a descriptor.
         *
         * @param address of the first byte.
         * @param length in bytes.
         * @return this builder.
         */
        public Builder add(long address, long length)
        {
            if (size == addresses.length) {
                int grown = Math.max(8, addresses.length + (addresses.length >> 1));
                addresses = Arrays.copyOf(addresses, grown);
                lengths = Arrays.copyOf(lengths, grown);
            }
            addresses[size] = address;
            lengths[size] = length;
            size++;
            return this;
        }

        /** {@return the number of descriptors added so far} */
        public int size()
        {
            return size;
        }

        /**
         * Builds the list; the builder must not be used afterwards.
         *
         * @return the validated list.
         */
        public DescriptorList build()
        {
            return wrap(kind, device, addresses, lengths, size);
        }
    }
}
