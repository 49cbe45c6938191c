package io.kvbridge.spi.memory;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import java.lang.foreign.MemorySegment;

/**
 * One physical memory range: the unit a transport registers, exactly once.
 *
 * <p>Addresses are virtual addresses in the owning process; for {@link MemoryKind#DEVICE} they are
 * device pointers valid on {@code device}. Several regions, and therefore several layers, may live
 * in one allocation.
 *
 * @param address of the first byte; positive.
 * @param bytes length of the range; positive, and {@code address + bytes} does not overflow.
 * @param kind host or device memory.
 * @param device device index for device memory; 0 for host memory.
 */
public record Allocation(long address, long bytes, MemoryKind kind, int device)
{
    /** Validates the range. */
    public Allocation
    {
        requireNonNull(kind, "kind is null");
        checkArgument(address > 0, "address=%d is not positive", address);
        checkArgument(bytes > 0, "bytes=%d is not positive", bytes);
        checkArgument(address <= Long.MAX_VALUE - bytes,
                "address=0x%x + bytes=%d overflows a signed 64-bit address", address, bytes);
        checkArgument(device >= 0, "device=%d is negative", device);
        checkArgument(kind == MemoryKind.DEVICE || device == 0, "device=%d given for host memory (expected: 0)", device);
    }

    /**
     * Describes host memory held by a native segment.
     *
     * @param segment a native (off-heap) segment; the caller keeps it alive while it is registered.
     * @return the allocation covering the whole segment.
     */
    public static Allocation host(MemorySegment segment)
    {
        requireNonNull(segment, "segment is null");
        checkArgument(segment.isNative(), "segment is on the Java heap; register off-heap memory only (the GC moves heap arrays)");
        return new Allocation(segment.address(), segment.byteSize(), MemoryKind.HOST, 0);
    }

    /**
     * Returns the address one past the last byte.
     *
     * @return {@code address + bytes}.
     */
    public long end()
    {
        return address + bytes;
    }

    /**
     * Tells whether a byte range lies entirely inside this allocation.
     *
     * @param start address of the range.
     * @param length of the range in bytes; non-negative.
     * @return true when {@code [start, start + length)} is inside {@code [address, end())}.
     */
    public boolean contains(long start, long length)
    {
        return start >= address && length >= 0 && length <= end() - start;
    }

    /**
     * Tells whether this allocation shares at least one byte with another of the same kind and device.
     *
     * @param other allocation.
     * @return true when the ranges overlap.
     */
    public boolean overlaps(Allocation other)
    {
        return kind == other.kind && device == other.device && address < other.end() && other.address < end();
    }
}
