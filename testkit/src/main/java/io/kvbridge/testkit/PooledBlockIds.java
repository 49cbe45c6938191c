package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * Block ids of one request as a hybrid allocator hands them out: each cache group gets its own
 * ids, and no id goes to two groups, because groups share the pools' pages.
 */
public final class PooledBlockIds
{
    private PooledBlockIds()
    {
    }

    /**
     * Draws distinct block ids for every group.
     *
     * @param counts ids wanted per group, in group order.
     * @param capacity pages per pool; the counts sum to at most this.
     * @param random the source of the draw.
     * @return one array per group, ids in {@code [0, capacity)}, distinct over all groups.
     */
    public static int[][] allocate(int[] counts, int capacity, Random random)
    {
        requireNonNull(counts, "counts is null");
        requireNonNull(random, "random is null");
        List<Integer> free = new ArrayList<>();
        for (int b = 0; b < capacity; b++) {
            free.add(b);
        }
        Collections.shuffle(free, random);
        int[][] ids = new int[counts.length][];
        int next = 0;
        for (int g = 0; g < counts.length; g++) {
            ids[g] = new int[counts[g]];
            for (int j = 0; j < counts[g]; j++) {
                ids[g][j] = free.get(next++);
            }
        }
        return ids;
    }
}
