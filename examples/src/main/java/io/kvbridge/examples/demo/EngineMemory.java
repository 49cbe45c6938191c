package io.kvbridge.examples.demo;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.TransferBackend;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where one demo engine keeps its cache: off-heap host memory it writes directly, or device memory
 * that the transport allocated ({@link TransferBackend#allocate}), which the CPU reaches only
 * through the transport's host copies. Pages are visited in batches so that device pages adjacent
 * in memory travel in one copy each way, through a host staging buffer.
 */
final class EngineMemory
{
    /** Longest single copy through the staging buffer. */
    private static final long STAGING_BYTES = 16L << 20;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED;

    /** What a visit does with the pages' bytes. */
    enum Access
    {
        /** Reads them: device pages are copied to the host first. */
        READ,
        /** Overwrites every byte: device pages are copied back afterwards, never read. */
        WRITE
    }

    /** One page's share of a visit. */
    @FunctionalInterface
    interface Visitor
    {
        /** Returns the wrong bytes found (0 when writing). */
        long visit(MemorySegment page, int index);
    }

    private final Arena arena;
    private final TransferBackend transport;
    private final int device;
    private final TreeMap<Long, Allocation> allocations = new TreeMap<>();
    private final TreeMap<Long, MemorySegment> hostSegments = new TreeMap<>();
    private MemorySegment staging;

    private EngineMemory(Arena arena, TransferBackend transport, int device)
    {
        this.arena = arena;
        this.transport = transport;
        this.device = device;
    }

    /** Host memory from the arena. */
    static EngineMemory host(Arena arena)
    {
        return new EngineMemory(arena, null, 0);
    }

    /** Device memory the transport allocates on {@code device}; the arena holds the staging buffer. */
    static EngineMemory device(Arena arena, TransferBackend transport, int device)
    {
        return new EngineMemory(arena, transport, device);
    }

    boolean onDevice()
    {
        return transport != null;
    }

    Allocation allocate(long bytes)
    {
        Allocation allocation;
        if (transport == null) {
            MemorySegment segment = arena.allocate(bytes, 4096);
            hostSegments.put(segment.address(), segment);
            allocation = Allocation.host(segment);
        }
        else {
            // registered with the bridge's own transport instance, which frees it when the bridge closes
            allocation = transport.allocate(bytes, MemoryKind.DEVICE, device);
        }
        allocations.put(allocation.address(), allocation);
        return allocation;
    }

    long totalBytes()
    {
        return allocations.values().stream().mapToLong(Allocation::bytes).sum();
    }

    /**
     * Visits pages given by address and length. Host pages are visited in place, in order; device
     * pages in address order, each run of adjacent pages copied in one piece.
     */
    long visit(long[] addresses, long[] lengths, int count, Access access, Visitor visitor)
    {
        long result = 0;
        if (transport == null) {
            for (int i = 0; i < count; i++) {
                Map.Entry<Long, MemorySegment> home = hostSegments.floorEntry(addresses[i]);
                result += visitor.visit(home.getValue().asSlice(addresses[i] - home.getKey(), lengths[i]), i);
            }
            return result;
        }
        Integer[] order = new Integer[count];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, (a, b) -> Long.compare(addresses[a], addresses[b]));
        int first = 0;
        while (first < count) {
            long start = addresses[order[first]];
            long end = start + lengths[order[first]];
            Allocation home = allocations.floorEntry(start).getValue();
            int last = first + 1;
            while (last < count && addresses[order[last]] == end && end - start + lengths[order[last]] <= STAGING_BYTES
                    && home.contains(end, lengths[order[last]])) {
                end += lengths[order[last]];
                last++;
            }
            MemorySegment run = staging(end - start);
            if (access == Access.READ) {
                transport.copyToHost(home, start - home.address(), run);
            }
            for (int k = first; k < last; k++) {
                int i = order[k];
                result += visitor.visit(run.asSlice(addresses[i] - start, lengths[i]), i);
            }
            if (access == Access.WRITE) {
                transport.copyFromHost(run, home, start - home.address());
            }
            first = last;
        }
        return result;
    }

    /** Counts the non-zero bytes of the whole cache. */
    long nonZeroBytes()
    {
        long wrong = 0;
        for (Allocation allocation : allocations.values()) {
            for (long offset = 0; offset < allocation.bytes(); offset += STAGING_BYTES) {
                MemorySegment chunk;
                if (transport == null) {
                    chunk = hostSegments.get(allocation.address()).asSlice(offset, Math.min(STAGING_BYTES, allocation.bytes() - offset));
                }
                else {
                    chunk = staging(Math.min(STAGING_BYTES, allocation.bytes() - offset));
                    transport.copyToHost(allocation, offset, chunk);
                }
                wrong += nonZeroBytes(chunk);
            }
        }
        return wrong;
    }

    private static long nonZeroBytes(MemorySegment segment)
    {
        long wrong = 0;
        long size = segment.byteSize();
        for (long o = 0; o + 8 <= size; o += 8) {
            long value = segment.get(WORD, o);
            if (value != 0) {
                wrong += Long.bitCount((value | value >>> 1 | value >>> 2 | value >>> 3 | value >>> 4 | value >>> 5 | value >>> 6 | value >>> 7)
                        & 0x0101010101010101L);
            }
        }
        for (long o = size & ~7L; o < size; o++) {
            wrong += segment.get(ValueLayout.JAVA_BYTE, o) != 0 ? 1 : 0;
        }
        return wrong;
    }

    private MemorySegment staging(long bytes)
    {
        if (staging == null || staging.byteSize() < bytes) {
            // grows to the longest page run; the arena frees it with the engine
            staging = arena.allocate(Math.max(bytes, 1L << 20), 4096);
        }
        return staging.asSlice(0, bytes);
    }
}
