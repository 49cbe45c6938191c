package io.kvbridge.examples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

final class BenchPatternTest
{
    private static final long BLOCK = 4096;

    @Test
    void theSeedsOwnPatternMatchesAndAnotherPassesDoesNot()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(16 * BLOCK, 8);
            BenchPattern.fill(buffer, 7);
            assertEquals(-1, BenchPattern.firstMismatch(buffer, 7));
            // a pass that moved nothing leaves the previous pass's data: it must not pass as this one
            assertEquals(0, BenchPattern.firstMismatch(buffer, 8));
        }
    }

    @Test
    void aBlockInTheWrongPlaceOrOneByteLeftOutIsFoundWhereItIs()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(16 * BLOCK, 8);
            BenchPattern.fill(buffer, 3);
            MemorySegment swapped = arena.allocate(BLOCK, 8);
            swapped.copyFrom(buffer.asSlice(5 * BLOCK, BLOCK));
            buffer.asSlice(5 * BLOCK, BLOCK).copyFrom(buffer.asSlice(6 * BLOCK, BLOCK));
            buffer.asSlice(6 * BLOCK, BLOCK).copyFrom(swapped);
            assertEquals(5 * BLOCK, BenchPattern.firstMismatch(buffer, 3));

            BenchPattern.fill(buffer, 3);
            buffer.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 9 * BLOCK + 13, (byte) (buffer.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 9 * BLOCK + 13) ^ 1));
            assertEquals(9 * BLOCK + 8, BenchPattern.firstMismatch(buffer, 3));
        }
    }
}
