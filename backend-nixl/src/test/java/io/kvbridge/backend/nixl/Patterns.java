package io.kvbridge.backend.nixl;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Byte patterns unique to a seed, so every byte that moves, and every byte that must not, can be checked. */
final class Patterns
{
    private Patterns()
    {
    }

    static long word(int seed, long offset)
    {
        long x = seed * 0x9E3779B97F4A7C15L + offset;
        x ^= x >>> 31;
        x *= 0xBF58476D1CE4E5B9L;
        return x ^ (x >>> 29);
    }

    /** Fills a segment with the pattern of a seed, position by position. */
    static void fill(MemorySegment segment, int seed)
    {
        fill(segment, 0, segment.byteSize(), seed);
    }

    /** Fills {@code [from, to)} with the seed's pattern for those offsets. */
    static void fill(MemorySegment segment, long from, long to, int seed)
    {
        for (long offset = from; offset < to; offset += 8) {
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, word(seed, offset));
        }
    }
}
