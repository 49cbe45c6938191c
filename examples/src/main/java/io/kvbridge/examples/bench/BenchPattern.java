package io.kvbridge.examples.bench;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The data a two-host bench moves: every 8-byte word differs from its neighbours and from the same
 * word under another seed (the words {@code tcp_stream.c} sends), so a block that lands in the wrong
 * place, a byte that was never written and a pass that left the previous pass's data all show.
 */
final class BenchPattern
{
    private static final long STEP = 0x9E3779B97F4A7C15L;
    private static final long SEED_STEP = 0xD6E8FEB86659FD93L;

    private BenchPattern()
    {
    }

    /** {@return word {@code index} under {@code seed}} */
    static long word(long index, long seed)
    {
        return (index * STEP + 1) ^ (seed * SEED_STEP);
    }

    /**
     * Writes the pattern of a seed over a whole segment.
     *
     * @param segment host memory whose size is a multiple of 8 bytes.
     * @param seed the seed.
     */
    static void fill(MemorySegment segment, long seed)
    {
        long words = segment.byteSize() / Long.BYTES;
        for (long i = 0; i < words; i++) {
            segment.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, word(i, seed));
        }
    }

    /**
     * Checks a segment against the pattern of a seed.
     *
     * @param segment host memory whose size is a multiple of 8 bytes.
     * @param seed the seed.
     * @return the byte offset of the first word that differs, or -1 when every word matches.
     */
    static long firstMismatch(MemorySegment segment, long seed)
    {
        long words = segment.byteSize() / Long.BYTES;
        for (long i = 0; i < words; i++) {
            if (segment.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i) != word(i, seed)) {
                return i * Long.BYTES;
            }
        }
        return -1;
    }
}
