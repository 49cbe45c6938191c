package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import java.util.Arrays;

/**
 * A request's block ids, one list per cache group (group order = the model's group ids). Immutable:
 * the arrays are copied in and out.
 */
public final class BlockIds
{
    private static final BlockIds EMPTY = new BlockIds(new int[0][]);

    private final int[][] groups;

    private BlockIds(int[][] groups)
    {
        this.groups = groups;
    }

    /**
     * Creates block ids.
     *
     * @param groups one array per cache group; ids are non-negative.
     * @return the block ids.
     */
    public static BlockIds of(int[]... groups)
    {
        requireNonNull(groups, "groups is null");
        int[][] copy = new int[groups.length][];
        for (int g = 0; g < groups.length; g++) {
            copy[g] = requireNonNull(groups[g], "group " + g + " is null").clone();
            for (int id : copy[g]) {
                checkArgument(id >= 0, "group %d holds block id=%d (expected: >= 0)", g, id);
            }
        }
        return new BlockIds(copy);
    }

    /** {@return block ids with no groups} */
    public static BlockIds empty()
    {
        return EMPTY;
    }

    /** {@return the number of groups} */
    public int groupCount()
    {
        return groups.length;
    }

    /**
     * Returns the number of blocks of a group.
     *
     * @param group group index.
     * @return its block count.
     */
    public int size(int group)
    {
        return groups[group].length;
    }

    /**
     * Returns one block id.
     *
     * @param group group index.
     * @param position position in the group's list.
     * @return the block id.
     */
    public int get(int group, int position)
    {
        return groups[group][position];
    }

    /**
     * Copies a group's ids.
     *
     * @param group group index.
     * @return a new array.
     */
    public int[] group(int group)
    {
        return groups[group].clone();
    }

    /** {@return the number of blocks over all groups} */
    public int total()
    {
        int total = 0;
        for (int[] group : groups) {
            total += group.length;
        }
        return total;
    }

    /** {@return true when no group holds a block (a full prefix-cache hit)} */
    public boolean isEmpty()
    {
        return total() == 0;
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof BlockIds other && Arrays.deepEquals(groups, other.groups);
    }

    @Override
    public int hashCode()
    {
        return Arrays.deepHashCode(groups);
    }

    @Override
    public String toString()
    {
        return Arrays.deepToString(groups).replace('[', '(').replace(']', ')');
    }
}
