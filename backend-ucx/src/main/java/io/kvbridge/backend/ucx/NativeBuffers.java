package io.kvbridge.backend.ucx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * Reusable native buffers for messages, in power-of-two size classes from 256 bytes to
 * {@link #MAX_BYTES}. Owner thread only; memory lives until the arena closes, bounded by the
 * largest number of messages in flight at once.
 */
final class NativeBuffers
{
    static final int MIN_CLASS = 8;
    static final int MAX_CLASS = 17;
    static final long MAX_BYTES = 1L << MAX_CLASS;

    private final Arena arena;
    private final List<ArrayDeque<MemorySegment>> free = new ArrayList<>();

    NativeBuffers(Arena arena)
    {
        this.arena = arena;
        for (int c = MIN_CLASS; c <= MAX_CLASS; c++) {
            free.add(new ArrayDeque<>());
        }
    }

    /**
     * Takes a buffer of at least {@code bytes}.
     *
     * @param bytes at most {@link #MAX_BYTES}.
     * @return a buffer whose size is a power of two.
     */
    MemorySegment take(long bytes)
    {
        if (bytes > MAX_BYTES) {
            throw new IllegalArgumentException("bytes=" + bytes + " exceeds " + MAX_BYTES);
        }
        int sizeClass = Math.max(MIN_CLASS, 64 - Long.numberOfLeadingZeros(Math.max(1, bytes) - 1));
        MemorySegment buffer = free.get(sizeClass - MIN_CLASS).poll();
        return buffer != null ? buffer : arena.allocate(1L << sizeClass, 16);
    }

    /**
     * Gives a buffer back.
     *
     * @param buffer from {@link #take}.
     */
    void give(MemorySegment buffer)
    {
        int sizeClass = 63 - Long.numberOfLeadingZeros(buffer.byteSize());
        free.get(sizeClass - MIN_CLASS).push(buffer);
    }
}
