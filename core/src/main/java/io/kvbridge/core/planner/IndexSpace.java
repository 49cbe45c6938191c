package io.kvbridge.core.planner;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

/**
 * The index space of one side's prepared descriptor list: entry {@code e} owns the indices
 * {@code [offset(e), offset(e) + capacity(e) * runs(e))}, offsets being the cumulative sizes, and
 * receives the block ids of its own cache group (every group's, concatenated, when its group is
 * -1). Block id {@code b} of an entry with {@code runs} runs (heads moved one by one, when block
 * sizes differ) yields the {@code runs} indices {@code offset + b * runs + h}. With one run,
 * uniform capacities {@code n} and shared regions this is the legacy {@code r * n + b}.
 */
final class IndexSpace
{
    private final String side;
    private final String[] names;
    private final int[] offsets;
    private final int[] capacities;
    private final int[] runs;
    private final int[] groupIds;
    private final int size;
    // runs summed per group over the entries of that group, [groups] over the entries of every group (-1):
    // for all entries, and for the entries of the later source slots
    private final boolean[] laterSlots;
    private final long[] runsAll;
    private final long[] runsLater;

    IndexSpace(String side, String[] names, int[] capacities, int[] runs, int[] groupIds, boolean[] laterSlots)
    {
        if (names.length != capacities.length || capacities.length != groupIds.length || runs.length != groupIds.length) {
            throw Checks.invalid("names=%d, capacities=%d, runs=%d and groupIds=%d differ in length", names.length, capacities.length, runs.length,
                    groupIds.length);
        }
        this.side = side;
        this.names = names.clone();
        this.capacities = capacities.clone();
        this.runs = runs.clone();
        this.groupIds = groupIds.clone();
        this.offsets = new int[capacities.length];
        long offset = 0;
        for (int e = 0; e < capacities.length; e++) {
            offsets[e] = (int) offset;
            offset += (long) capacities[e] * runs[e];
            if (offset > Integer.MAX_VALUE) {
                throw Checks.failure(ErrorCode.UNSUPPORTED, "%s descriptor list would hold %d descriptors, more than the %d an index can address",
                        side, offset, Integer.MAX_VALUE);
            }
        }
        this.size = (int) offset;
        this.laterSlots = laterSlots;
        this.runsAll = sumRuns(null);
        this.runsLater = sumRuns(laterSlots);
    }

    private long[] sumRuns(boolean[] include)
    {
        int groups = 0;
        for (int group : groupIds) {
            groups = Math.max(groups, group + 1);
        }
        long[] sums = new long[groups + 1];
        for (int e = 0; e < offsets.length; e++) {
            if (include == null || include[e]) {
                sums[groupIds[e] < 0 ? groups : groupIds[e]] += runs[e];
            }
        }
        return sums;
    }

    int size()
    {
        return size;
    }

    /**
     * Counts the indices a selection yields over the included entries: all (null) or those of the
     * later source slots. One step per group, not per entry: each group's runs are summed when the
     * space is built.
     */
    int count(BlockSelection blocks, boolean[] include)
    {
        if (include != null && include != laterSlots) {
            throw Checks.invalid("include must be null or the plan's later-slot entries");
        }
        long[] sums = include == null ? runsAll : runsLater;
        int groups = sums.length - 1;
        long total = sums[groups] == 0 ? 0 : (long) blocks.total() * sums[groups];
        for (int g = 0; g < groups && g < blocks.groups(); g++) {
            total += blocks.countOf(g) * sums[g];
        }
        if (total > Integer.MAX_VALUE) {
            throw Checks.invalid("request of %d descriptors exceeds an int", total);
        }
        return (int) total;
    }

    /**
     * Writes the indices of a selection, entry-major, and returns how many were written.
     * Allocates nothing unless it throws.
     */
    int compute(BlockSelection blocks, boolean[] include, int[] out)
    {
        return fill(blocks, include, count(blocks, include), out);
    }

    /**
     * Counts the indices a selection yields over the entries a mask selects (those of the later
     * source slots only, when {@code laterOnly}). One step per entry: for a part of a request, such
     * as the layers of it computed so far.
     */
    int countEntries(BlockSelection blocks, boolean[] mask, boolean laterOnly)
    {
        checkMask(mask);
        long total = 0;
        for (int e = 0; e < offsets.length; e++) {
            if (mask[e] && (!laterOnly || laterSlots[e])) {
                int group = groupIds[e];
                total += (long) (group < 0 ? blocks.total() : group < blocks.groups() ? blocks.countOf(group) : 0) * runs[e];
            }
        }
        if (total > Integer.MAX_VALUE) {
            throw Checks.invalid("request of %d descriptors exceeds an int", total);
        }
        return (int) total;
    }

    /**
     * Computes the indices of the entries a mask selects, as {@link #countEntries} counts them;
     * {@code scratch} receives the mask the fill reads. Allocates nothing unless it throws.
     */
    int computeEntries(BlockSelection blocks, boolean[] mask, boolean laterOnly, boolean[] scratch, int[] out)
    {
        int needed = countEntries(blocks, mask, laterOnly);
        checkMask(scratch);
        for (int e = 0; e < offsets.length; e++) {
            scratch[e] = mask[e] && (!laterOnly || laterSlots[e]);
        }
        return fill(blocks, scratch, needed, out);
    }

    private void checkMask(boolean[] mask)
    {
        if (mask.length != offsets.length) {
            throw Checks.invalid("mask.length=%d differs from the plan's %d entries", mask.length, offsets.length);
        }
    }

    private int fill(BlockSelection blocks, boolean[] include, int needed, int[] out)
    {
        if (out.length < needed) {
            throw Checks.invalid("out.length=%d is smaller than the %d indices of this request (size it with indexCount)", out.length, needed);
        }
        int n = 0;
        int groups = blocks.groups();
        for (int e = 0; e < offsets.length; e++) {
            if (include != null && !include[e]) {
                continue;
            }
            int group = groupIds[e];
            if (group >= 0) {
                n = write(blocks, group, e, out, n);
            }
            else {
                for (int g = 0; g < groups; g++) {
                    n = write(blocks, g, e, out, n);
                }
            }
        }
        return n;
    }

    private int write(BlockSelection blocks, int group, int entry, int[] out, int n)
    {
        int offset = offsets[entry];
        int capacity = capacities[entry];
        int count = blocks.countOf(group);
        if (count == 0) {
            return n;
        }
        boolean inside = blocks.lowestId(group) >= 0 && blocks.highestId(group) < capacity;
        int entryRuns = runs[entry];
        if (entryRuns > 1) {
            for (int p = 0; p < count; p++) {
                long id = blocks.expandedId(group, p);
                if (!inside && (id < 0 || id >= capacity)) {
                    throw outOfRange(blocks, group, p, id, entry);
                }
                int first = offset + (int) id * entryRuns;
                for (int h = 0; h < entryRuns; h++) {
                    out[n++] = first + h;
                }
            }
            return n;
        }
        if (count == 1) {
            // one id (a state, a one-block prompt): no copy loop to set up
            long id = blocks.expandedId(group, 0);
            if (!inside && (id < 0 || id >= capacity)) {
                throw outOfRange(blocks, group, 0, id, entry);
            }
            out[n] = offset + (int) id;
            return n + 1;
        }
        if (inside && blocks.factor(group) == 1) {
            // the common case: ids checked once per group, then a copy and an add over one
            // array, both of which the JIT turns into vector code
            System.arraycopy(blocks.rawIds(group), blocks.skip(group), out, n, count);
            int end = n + count;
            for (int i = n; i < end; i++) {
                out[i] += offset;
            }
            return end;
        }
        for (int p = 0; p < count; p++) {
            long id = blocks.expandedId(group, p);
            if (!inside && (id < 0 || id >= capacity)) {
                throw outOfRange(blocks, group, p, id, entry);
            }
            out[n++] = offset + (int) id;
        }
        return n;
    }

    private KvBridgeException outOfRange(BlockSelection blocks, int group, int position, long id, int entry)
    {
        return Checks.failure(ErrorCode.BLOCK_OUT_OF_RANGE, "%s block id=%d (group %d, position %d, descriptor %d after expansion) is outside region %s of capacity=%d descriptors: block ids must lie in [0, capacity) of the region their group addresses",
                side, blocks.sourceId(group, position), group, position, id, names[entry], capacities[entry]);
    }
}
