package io.kvbridge.core.planner;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.BlockSizes;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGroup;
import java.util.Arrays;
import java.util.List;

/**
 * The block ids of one side of a request, per cache group, and the transformations the planner
 * applies to them before computing descriptor indices: logical to kernel expansion, trimming the
 * producer's blocks to what the consumer still needs, and splitting the larger blocks into
 * sub-blocks of the smaller size ({@link #align}).
 *
 * <p>The transformations are arithmetic on a window over the caller's arrays: each id {@code b}
 * of a group expands to {@code factor} consecutive ids {@code b * factor .. b * factor + factor - 1},
 * of which the positions {@code [skip, skip + count)} are kept. Nothing is copied, so a selection
 * reused across requests allocates nothing. The caller's arrays must not change while the
 * selection is in use: after changing them, {@link #select} them again.
 *
 * <p>Ids are not trusted here: they are checked against region capacities when indices are
 * computed ({@code BLOCK_OUT_OF_RANGE}).
 *
 * <p>Not thread-safe: one selection per thread.
 */
public final class BlockSelection
{
    private final int groups;
    private final int[][] ids;
    private final int[] factors;
    private final int[] skips;
    private final int[] counts;
    private final boolean[] indivisible;
    // per-group bounds of the selected ids, computed on first use after a change, so index
    // computation checks a group's ids once instead of once per region it addresses
    private final long[] lowest;
    private final long[] highest;
    private final boolean[] boundsKnown;

    /**
     * Creates an empty selection.
     *
     * @param groups number of cache groups; positive.
     */
    public BlockSelection(int groups)
    {
        if (groups <= 0) {
            throw Checks.invalid("groups=%d is not positive", groups);
        }
        this.groups = groups;
        this.ids = new int[groups][];
        this.factors = new int[groups];
        this.skips = new int[groups];
        this.counts = new int[groups];
        this.indivisible = new boolean[groups];
        this.lowest = new long[groups];
        this.highest = new long[groups];
        this.boundsKnown = new boolean[groups];
        for (int g = 0; g < groups; g++) {
            ids[g] = new int[0];
            factors[g] = 1;
        }
    }

    /**
     * Creates an empty selection for a geometry's groups, its state groups marked
     * {@link #indivisible}: a state block is a whole state, never expanded or split.
     *
     * @param groups the cache groups in id order; not empty.
     * @return the selection.
     */
    public static BlockSelection forGroups(List<CacheGroup> groups)
    {
        requireNonNull(groups, "groups is null");
        BlockSelection selection = new BlockSelection(groups.size());
        for (int g = 0; g < groups.size(); g++) {
            if (groups.get(g).stateful()) {
                selection.indivisible(g);
            }
        }
        return selection;
    }

    /**
     * Creates a selection of the given block ids.
     *
     * @param blockIds block ids per group; referenced, not copied.
     * @return the selection.
     */
    public static BlockSelection of(int[]... blockIds)
    {
        requireNonNull(blockIds, "blockIds is null");
        return new BlockSelection(blockIds.length).select(blockIds);
    }

    /**
     * Replaces every group's block ids and forgets earlier transformations.
     *
     * @param blockIds block ids per group, exactly {@link #groups()} arrays; referenced, not copied.
     * @return this selection.
     */
    public BlockSelection select(int[][] blockIds)
    {
        requireNonNull(blockIds, "blockIds is null");
        if (blockIds.length != groups) {
            throw Checks.invalid("%d groups of block ids given to a selection of groups=%d", blockIds.length, groups);
        }
        for (int g = 0; g < groups; g++) {
            int[] group = blockIds[g];
            if (group == null) {
                throw Checks.invalid("block ids of group %d are null", g);
            }
            select(g, group, group.length);
        }
        return this;
    }

    /**
     * Replaces one group's block ids and forgets its earlier transformations.
     *
     * @param group the cache group.
     * @param blockIds the group's block ids; referenced, not copied.
     * @param length number of ids of {@code blockIds} that are used.
     * @return this selection.
     */
    public BlockSelection select(int group, int[] blockIds, int length)
    {
        checkGroup(group);
        requireNonNull(blockIds, "blockIds is null");
        if (length < 0 || length > blockIds.length) {
            throw Checks.invalid("length=%d is outside [0, blockIds.length=%d]", length, blockIds.length);
        }
        ids[group] = blockIds;
        factors[group] = 1;
        skips[group] = 0;
        counts[group] = length;
        boundsKnown[group] = false;
        return this;
    }

    /**
     * Marks a group whose blocks are indivisible state (SSM): never expanded to kernel blocks,
     * never split into sub-blocks. The mark survives {@link #select}.
     *
     * @param group the cache group.
     * @return this selection.
     */
    public BlockSelection indivisible(int group)
    {
        checkGroup(group);
        indivisible[group] = true;
        return this;
    }

    /**
     * Expands logical (scheduler) block ids to kernel block ids: {@code b} becomes
     * {@code b * k .. b * k + k - 1}, order preserved.
     *
     * @param kernelBlocksPerLogical kernel blocks per logical block of this side; positive.
     * @return this selection.
     */
    public BlockSelection expandToKernel(int kernelBlocksPerLogical)
    {
        if (kernelBlocksPerLogical <= 0) {
            throw Checks.invalid("kernelBlocksPerLogical=%d is not positive", kernelBlocksPerLogical);
        }
        for (int g = 0; g < groups; g++) {
            if (!indivisible[g]) {
                scale(g, kernelBlocksPerLogical, Long.MAX_VALUE);
            }
        }
        return this;
    }

    /**
     * Trims this (producer) selection to the blocks the consumer still needs: when the consumer had
     * a prefix-cache hit it holds fewer blocks, and they correspond to the producer's last ones.
     * The front is never trimmed away from the end.
     *
     * @param consumer the consumer side's selection, in the same block size.
     * @return this selection.
     * @throws KvBridgeException {@code LENGTH_MISMATCH} when the consumer needs more blocks than
     *     the producer holds in some group, {@code UNSUPPORTED} for indivisible groups of unequal length.
     */
    public BlockSelection keepLast(BlockSelection consumer)
    {
        requireNonNull(consumer, "consumer is null");
        checkSameGroups(consumer, "consumer");
        for (int g = 0; g < groups; g++) {
            keepLast(g, consumer.counts[g]);
        }
        return this;
    }

    /**
     * Aligns a request's consumer and producer blocks, both already expanded to kernel blocks,
     * when their block sizes may differ, group by group (indivisible groups must already be equal):
     * afterwards both selections have the same count per group and position {@code i} of one moves
     * to position {@code i} of the other.
     *
     * <p>The producer is trimmed in scheduler (logical) blocks, whose last one is the last holding
     * tokens; the kernel expansion that followed may have added kernel blocks past the prompt on
     * either side, which are matched with each other or clipped. It keeps the last blocks
     * {@link BlockSizes#producerBlocksKept} names.
     *
     * <p>Then the side with the larger kernel block splits each into sub-blocks of the smaller
     * size, and both are clipped to the shorter. When the consumer's blocks are the larger, the
     * tokens of its last block past the producer's last one receive nothing
     * ({@link BlockSizes#unwrittenTailTokens}).
     *
     * @param consumer the consumer's selection, in its kernel blocks.
     * @param consumerBlockTokens tokens of a consumer scheduler block.
     * @param consumerKernelTokens tokens of a consumer kernel block.
     * @param producer the producer's selection, in its kernel blocks.
     * @param producerBlockTokens tokens of a producer scheduler block.
     * @param producerKernelTokens tokens of a producer kernel block.
     * @throws KvBridgeException {@code LENGTH_MISMATCH} when the consumer needs more tokens than the
     *     producer holds in some group.
     */
    public static void align(BlockSelection consumer, int consumerBlockTokens, int consumerKernelTokens, BlockSelection producer, int producerBlockTokens,
            int producerKernelTokens)
    {
        requireNonNull(consumer, "consumer is null");
        requireNonNull(producer, "producer is null");
        if (consumerBlockTokens == producerBlockTokens && consumerKernelTokens == producerKernelTokens) {
            producer.keepLast(consumer);
            return;
        }
        producer.checkSameGroups(consumer, "consumer");
        int consumerPerLogical = consumerBlockTokens / consumerKernelTokens;
        int producerPerLogical = producerBlockTokens / producerKernelTokens;
        for (int g = 0; g < consumer.groups; g++) {
            if (consumer.indivisible[g] || producer.indivisible[g]) {
                producer.keepLast(g, consumer.counts[g]);
                continue;
            }
            int needed = consumer.counts[g] / consumerPerLogical;
            int held = producer.counts[g] / producerPerLogical;
            int kept = BlockSizes.producerBlocksKept(consumerBlockTokens, producerBlockTokens, needed, held);
            if (kept < 0) {
                throw tooMany(g, needed, held, consumerBlockTokens, producerBlockTokens);
            }
            producer.keepLast(g, kept * producerPerLogical);
            if (consumerKernelTokens > producerKernelTokens) {
                consumer.scale(g, consumerKernelTokens / producerKernelTokens, producer.counts[g]);
            }
            else if (producerKernelTokens > consumerKernelTokens) {
                producer.scale(g, producerKernelTokens / consumerKernelTokens, consumer.counts[g]);
            }
            int common = Math.min(consumer.counts[g], producer.counts[g]);
            consumer.keepFirst(g, common);
            producer.keepFirst(g, common);
        }
    }

    private void keepFirst(int group, int count)
    {
        boundsKnown[group] = false;
        counts[group] = Math.min(counts[group], count);
    }

    private static KvBridgeException tooMany(int group, int needed, int held, int consumerBlockTokens, int producerBlockTokens)
    {
        return Checks.failure(ErrorCode.LENGTH_MISMATCH, "group %d: the consumer needs %d blocks of %d tokens but the producer holds only %d of %d tokens (a consumer never needs more tokens than the producer computed; check the request's block ids)",
                group, needed, consumerBlockTokens, held, producerBlockTokens);
    }

    private void keepLast(int group, int needed)
    {
        if (needed > counts[group]) {
            throw Checks.failure(ErrorCode.LENGTH_MISMATCH, "group %d: the consumer needs %d blocks but the producer holds only %d (a consumer never needs more blocks than the producer computed; check the request's block ids)",
                    group, needed, counts[group]);
        }
        if (indivisible[group] && needed != counts[group]) {
            throw Checks.failure(ErrorCode.UNSUPPORTED, "group %d: trimming indivisible state blocks (producer=%d, consumer=%d) is not supported",
                    group, counts[group], needed);
        }
        boundsKnown[group] = false;
        skips[group] += counts[group] - needed;
        counts[group] = needed;
    }

    private void scale(int group, int factor, long limit)
    {
        long factor64 = (long) factors[group] * factor;
        long count64 = Math.min((long) counts[group] * factor, limit);
        if (factor64 > Integer.MAX_VALUE || count64 > Integer.MAX_VALUE) {
            throw Checks.invalid("group %d: expanding %d blocks by %d overflows", group, counts[group], factors[group] * (long) factor);
        }
        boundsKnown[group] = false;
        factors[group] = (int) factor64;
        skips[group] = skips[group] * factor;
        counts[group] = (int) count64;
    }

    private void checkSameGroups(BlockSelection other, String name)
    {
        if (other.groups != groups) {
            throw Checks.failure(ErrorCode.LENGTH_MISMATCH, "the %s selection has groups=%d but this one groups=%d (expected: both sides list block ids for every cache group)",
                    name, other.groups, groups);
        }
    }

    private void checkGroup(int group)
    {
        if (group < 0 || group >= groups) {
            throw Checks.invalid("group=%d is outside [0, groups=%d)", group, groups);
        }
    }

    /**
     * Returns the number of cache groups.
     *
     * @return the group count given at construction.
     */
    public int groups()
    {
        return groups;
    }

    /**
     * Returns the number of selected ids of a group.
     *
     * @param group the cache group.
     * @return the count after the transformations applied so far.
     */
    public int count(int group)
    {
        checkGroup(group);
        return counts[group];
    }

    /**
     * Returns the number of selected ids over all groups.
     *
     * @return the sum of {@link #count(int)}.
     */
    public int total()
    {
        long total = 0;
        for (int g = 0; g < groups; g++) {
            total += counts[g];
        }
        if (total > Integer.MAX_VALUE) {
            throw Checks.invalid("selection of %d ids exceeds an int", total);
        }
        return (int) total;
    }

    /**
     * Tells whether nothing is left to transfer (a full prefix hit).
     *
     * @return true when every group is empty.
     */
    public boolean isEmpty()
    {
        for (int g = 0; g < groups; g++) {
            if (counts[g] > 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Returns one selected id.
     *
     * @param group the cache group.
     * @param position in {@code [0, count(group))}.
     * @return the expanded id; negative when the caller's id was negative.
     */
    public long id(int group, int position)
    {
        checkGroup(group);
        if (position < 0 || position >= counts[group]) {
            throw Checks.invalid("position=%d is outside [0, count=%d) of group %d", position, counts[group], group);
        }
        return expandedId(group, position);
    }

    /** Returns a lower bound of the selected ids of a group (exact without expansion). */
    long lowestId(int group)
    {
        computeBounds(group);
        return lowest[group];
    }

    /** Returns an upper bound of the selected ids of a group (exact without expansion). */
    long highestId(int group)
    {
        computeBounds(group);
        return highest[group];
    }

    private void computeBounds(int group)
    {
        if (boundsKnown[group]) {
            return;
        }
        int factor = factors[group];
        int count = counts[group];
        long low = Long.MAX_VALUE;
        long high = Long.MIN_VALUE;
        if (count > 0) {
            int[] groupIds = ids[group];
            int first = skips[group] / factor;
            int last = (skips[group] + count - 1) / factor;
            int rawLow = Integer.MAX_VALUE;
            int rawHigh = Integer.MIN_VALUE;
            for (int i = first; i <= last; i++) {
                rawLow = Math.min(rawLow, groupIds[i]);
                rawHigh = Math.max(rawHigh, groupIds[i]);
            }
            low = (long) rawLow * factor;
            high = (long) rawHigh * factor + factor - 1;
        }
        lowest[group] = low;
        highest[group] = high;
        boundsKnown[group] = true;
    }

    int[] rawIds(int group)
    {
        return ids[group];
    }

    int factor(int group)
    {
        return factors[group];
    }

    int skip(int group)
    {
        return skips[group];
    }

    int countOf(int group)
    {
        return counts[group];
    }

    long expandedId(int group, int position)
    {
        int factor = factors[group];
        int expanded = skips[group] + position;
        if (factor == 1) {
            return ids[group][expanded];
        }
        return (long) ids[group][expanded / factor] * factor + expanded % factor;
    }

    /**
     * Returns the id of the caller's array an expanded position came from, for error messages.
     *
     * @param group the cache group.
     * @param position in {@code [0, count(group))}.
     * @return the original block id.
     */
    int sourceId(int group, int position)
    {
        return ids[group][(skips[group] + position) / factors[group]];
    }

    /**
     * Copies a group's selected ids; for diagnostics and tests, not for the per-request path.
     *
     * @param group the cache group.
     * @return a new array of {@link #count(int)} ids.
     */
    public long[] toArray(int group)
    {
        checkGroup(group);
        long[] result = new long[counts[group]];
        for (int p = 0; p < result.length; p++) {
            result[p] = expandedId(group, p);
        }
        return result;
    }

    @Override
    public String toString()
    {
        StringBuilder text = new StringBuilder("BlockSelection[");
        for (int g = 0; g < groups; g++) {
            text.append(g == 0 ? "" : ", ").append(counts[g] <= 16 ? Arrays.toString(toArray(g)) : counts[g] + " ids");
        }
        return text.append(']').toString();
    }
}
