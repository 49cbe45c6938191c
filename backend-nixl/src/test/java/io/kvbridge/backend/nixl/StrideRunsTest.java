package io.kvbridge.backend.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The merge rule of NIXL 1.4.0, computed on the Java side, on lists whose runs are worked out by hand. */
final class StrideRunsTest
{
    private static final long L = 4096;

    @Test
    void consecutiveIndicesInDenseRunsMerge()
    {
        StrideRuns dense = runs(0, 1, 2, 3, 4, 5, 6, 7);
        assertEquals(1, StrideRuns.merged(dense, ints(0, 1, 2, 3), dense, ints(4, 5, 6, 7), 4));
        assertEquals(2, StrideRuns.merged(dense, ints(0, 1, 5, 6), dense, ints(0, 1, 2, 3), 4));
        assertEquals(4, StrideRuns.merged(dense, ints(3, 2, 1, 0), dense, ints(3, 2, 1, 0), 4), "backwards never merges");
        assertEquals(2, StrideRuns.merged(dense, ints(5, 6), dense, ints(2, 2), 2), "a repeated remote index is not a run");
    }

    @Test
    void aSecondDescriptorSetsTheStrideSoContiguousPairsMayStaySeparate()
    {
        // blocks 0, 3, 4: the run {0, 3} has stride 3 blocks, so 3 and 4 are adjacent in memory but in two runs
        StrideRuns irregular = runs(0, 3, 4);
        StrideRuns dense = runs(0, 1, 2, 3);
        assertEquals(2, StrideRuns.merged(irregular, ints(1, 2), dense, ints(0, 1), 2));
        // and a strided run never merges, even with consecutive indices
        assertEquals(2, StrideRuns.merged(irregular, ints(0, 1), dense, ints(0, 1), 2));
        // blocks 0, 1, 2, then 5, 6: the stride changes at 5, which starts a dense run of its own
        StrideRuns twoRuns = runs(0, 1, 2, 5, 6);
        assertEquals(2, StrideRuns.merged(twoRuns, ints(0, 1, 2, 3, 4), dense(8), ints(0, 1, 2, 3, 4), 5));
    }

    @Test
    void runsEndAtRegistrationsAndLengths()
    {
        long[] addresses = {0, L, 2 * L, 3 * L};
        StrideRuns twoRegistrations = StrideRuns.of(addresses, new long[] {L, L, L, L}, new int[] {1, 1, 2, 2});
        StrideRuns dense = runs(0, 1, 2, 3);
        assertEquals(2, StrideRuns.merged(twoRegistrations, ints(0, 1, 2, 3), dense, ints(0, 1, 2, 3), 4));
        StrideRuns halves = StrideRuns.of(new long[] {0, L, 2 * L, 2 * L + L / 2}, new long[] {L, L, L / 2, L / 2}, new int[] {1, 1, 1, 1});
        StrideRuns halvesRemote = StrideRuns.of(new long[] {0, L, 2 * L, 2 * L + L / 2}, new long[] {L, L, L / 2, L / 2}, new int[] {1, 1, 1, 1});
        assertEquals(2, StrideRuns.merged(halves, ints(0, 1, 2, 3), halvesRemote, ints(0, 1, 2, 3), 4));
    }

    @Test
    void equalStridesAreNeededOnBothSides()
    {
        // K planes of interleaved K/V blocks: length L at stride 2L, against dense blocks
        StrideRuns planes = StrideRuns.of(new long[] {0, 2 * L, 4 * L, 6 * L}, new long[] {L, L, L, L}, new int[] {1, 1, 1, 1});
        StrideRuns dense = runs(0, 1, 2, 3);
        assertEquals(4, StrideRuns.merged(planes, ints(0, 1, 2, 3), dense, ints(0, 1, 2, 3), 4));
        assertEquals(4, StrideRuns.merged(dense, ints(0, 1, 2, 3), planes, ints(0, 1, 2, 3), 4));
        assertEquals(4, StrideRuns.merged(planes, ints(0, 1, 2, 3), planes, ints(0, 1, 2, 3), 4));
    }

    private static StrideRuns dense(int blocks)
    {
        long[] positions = new long[blocks];
        for (int i = 0; i < blocks; i++) {
            positions[i] = i;
        }
        return runs(positions);
    }

    /** A list of whole blocks at the given block positions, all in one registration. */
    private static StrideRuns runs(long... blockPositions)
    {
        long[] addresses = new long[blockPositions.length];
        long[] lengths = new long[blockPositions.length];
        for (int i = 0; i < addresses.length; i++) {
            addresses[i] = (1 << 20) + blockPositions[i] * L;
            lengths[i] = L;
        }
        return StrideRuns.of(addresses, lengths, new int[addresses.length]);
    }

    private static int[] ints(int... values)
    {
        return values;
    }
}
