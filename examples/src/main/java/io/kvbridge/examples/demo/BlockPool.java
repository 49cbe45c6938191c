package io.kvbridge.examples.demo;

import java.util.ArrayDeque;

/**
 * The block allocator of one engine, kept by the scheduler: a hybrid allocator's pools are shared by
 * its groups, so block ids of all groups come from one free list, and every pipeline stage uses the
 * same ids for its own layers.
 */
final class BlockPool
{
    private final DemoModel model;
    private final int blockTokens;
    private final ArrayDeque<Integer> free = new ArrayDeque<>();

    BlockPool(DemoModel model, int capacity, int blockTokens)
    {
        this.model = model;
        this.blockTokens = blockTokens;
        for (int block = 0; block < capacity; block++) {
            free.add(block);
        }
    }

    /** Takes the blocks of a prompt for every group: the last ones the group holds. */
    int[][] allocate(int promptBlocks)
    {
        int[][] ids = new int[model.groups().size()][];
        for (int g = 0; g < ids.length; g++) {
            ids[g] = new int[model.heldBlocks(g, promptBlocks, blockTokens)];
            for (int j = 0; j < ids[g].length; j++) {
                Integer block = free.poll();
                if (block == null) {
                    throw new IllegalStateException("block pool exhausted: " + promptBlocks + " prompt blocks do not fit");
                }
                ids[g][j] = block;
            }
        }
        return ids;
    }

    void release(int[][] ids)
    {
        for (int[] group : ids) {
            for (int block : group) {
                free.add(block);
            }
        }
    }
}
