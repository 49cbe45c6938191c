package io.kvbridge.layout.hma;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Locale;

/**
 * Byte layout of the pools a hybrid memory allocator shares between cache groups. Every group has
 * its own block ids, but the {@code i}-th layer of every group lives in the same pool {@code i}:
 * one allocation of {@code capacity} pages, where page {@code b} holds block {@code b} of whichever
 * group the allocator gave block id {@code b} to (it never gives one id to two groups). All groups
 * therefore use one page size, and a pool overlaid by several groups is advertised with group id -1.
 *
 * <pre>
 *   groups: g0 full attention [L4, L9]      g1 sliding window [L0, L1, L2, L3, L5, ...]
 *   pool 0 = {L0 (g1), L4 (g0)}   pool 1 = {L1 (g1), L9 (g0)}   pool 2 = {L2 (g1)}  ...
 *
 *   pool 0:   0          pageBytes      2 x pageBytes                    capacity x pageBytes
 *             +-------------+-------------+-------------+-- ... --+-------------+
 *             | page 0      | page 1      | page 2      |         | page P-1    |
 *             | g1 block 0  | g0 block 1  | g1 block 2  |         | free        |
 *             | (L0's KV)   | (L4's KV)   | (L0's KV)   |         |             |
 *             +-------------+-------------+-------------+-- ... --+-------------+
 *
 *   one page, heads outermost (H heads of this rank, N tokens, K and V side by side):
 *             +--------------------------+--------------------------+-- ... --+
 *             | head 0: tok 0 .. N-1 K V | head 1: tok 0 .. N-1 K V |         |
 *             +--------------------------+--------------------------+-- ... --+
 *             pageBytes = H x N x 2 x headSize x elementBytes
 * </pre>
 *
 * <p>Pools are built from the layers one pipeline stage owns, so a stage pools differently from an
 * engine without pipeline parallelism; peers then pair layers by name, never by pool index.
 */
public final class HmaPoolDescriptor
{
    /** Group id of a pool that layers of several groups overlay. */
    public static final int SHARED_GROUP = -1;

    private HmaPoolDescriptor()
    {
    }

    /**
     * Returns each layer's pool: its position among the layers of its own group.
     *
     * @param groupIds the group of each layer the stage owns, in model order.
     * @return the pool index of each layer, in the same order.
     */
    public static int[] poolIndices(int[] groupIds)
    {
        requireNonNull(groupIds, "groupIds is null");
        int groups = 0;
        for (int group : groupIds) {
            checkArgument(group >= 0, "groupId=%d is negative", group);
            groups = Math.max(groups, group + 1);
        }
        int[] seenPerGroup = new int[groups];
        int[] pools = new int[groupIds.length];
        for (int i = 0; i < groupIds.length; i++) {
            pools[i] = seenPerGroup[groupIds[i]]++;
        }
        return pools;
    }

    /**
     * Returns the number of pools: the layer count of the largest group.
     *
     * @param poolIndices as returned by {@link #poolIndices(int[])}.
     * @return one more than the highest pool index, or 0 without layers.
     */
    public static int poolCount(int[] poolIndices)
    {
        int count = 0;
        for (int pool : poolIndices) {
            count = Math.max(count, pool + 1);
        }
        return count;
    }

    /**
     * Returns the bytes of one page: one block of one attention layer on one rank.
     *
     * @param headsPerRank KV heads the rank holds.
     * @param blockTokens tokens per kernel block.
     * @param headSize elements per head.
     * @param elementBytes bytes per element.
     * @return {@code headsPerRank x blockTokens x 2 x headSize x elementBytes}.
     */
    public static long pageBytes(int headsPerRank, int blockTokens, int headSize, int elementBytes)
    {
        checkArgument(headsPerRank > 0 && blockTokens > 0 && headSize > 0 && elementBytes > 0,
                "headsPerRank=%d, blockTokens=%d, headSize=%d and elementBytes=%d must all be positive", headsPerRank, blockTokens, headSize, elementBytes);
        long perToken = 2L * headSize * elementBytes;
        checkArgument(perToken <= Long.MAX_VALUE / ((long) headsPerRank * blockTokens),
                "headsPerRank=%d x blockTokens=%d x 2 x headSize=%d x elementBytes=%d overflows", headsPerRank, blockTokens, headSize, elementBytes);
        return (long) headsPerRank * blockTokens * perToken;
    }

    /**
     * Returns the KV heads one tensor-parallel rank holds of a group's layer.
     *
     * @param kvHeads heads of the layer across all ranks.
     * @param tpSize tensor-parallel size.
     * @return {@code kvHeads / tpSize}, or 1 when heads are replicated because there are fewer than ranks.
     */
    public static int headsPerRank(int kvHeads, int tpSize)
    {
        checkArgument(kvHeads > 0 && tpSize > 0, "kvHeads=%d and tpSize=%d must be positive", kvHeads, tpSize);
        checkArgument(kvHeads % tpSize == 0 || tpSize % kvHeads == 0,
                "kvHeads=%d and tpSize=%d do not divide one another, so heads cannot be spread evenly over the ranks", kvHeads, tpSize);
        return Math.max(1, kvHeads / tpSize);
    }

    /**
     * Returns the offset of a page inside its pool.
     *
     * @param block block id, in {@code [0, capacity)}.
     * @param pageStride bytes between consecutive pages.
     * @return {@code block x pageStride}.
     */
    public static long pageOffset(int block, long pageStride)
    {
        return block * pageStride;
    }

    /**
     * Returns the states an allocation of a state layer holds.
     *
     * @param layer the layer, for the message.
     * @param allocationBytes bytes of the allocation.
     * @param stateBytes bytes of one state on this rank.
     * @return {@code allocationBytes / stateBytes}.
     * @throws KvBridgeException {@code LAYOUT_UNSUPPORTED} when it holds no whole state.
     */
    public static int checkStateCapacity(String layer, long allocationBytes, long stateBytes)
    {
        long states = allocationBytes / stateBytes;
        KvBridgeException.check(states > 0 && states <= Integer.MAX_VALUE, ErrorCode.LAYOUT_UNSUPPORTED,
                "state layer %s: allocation of %d bytes holds %d states of %d bytes (expected: between 1 and %d)", layer, allocationBytes, states, stateBytes,
                Integer.MAX_VALUE);
        return (int) states;
    }

    /**
     * Checks that every group uses the same page size, as pools shared by groups require.
     *
     * @param pageBytesPerGroup page bytes of each group, in group order; 0 for a group without
     *     layers on this stage.
     * @return the common page size.
     * @throws KvBridgeException {@code LAYOUT_UNSUPPORTED} naming the first two groups that differ.
     */
    public static long checkUniformPageBytes(long[] pageBytesPerGroup)
    {
        requireNonNull(pageBytesPerGroup, "pageBytesPerGroup is null");
        long common = 0;
        int first = -1;
        for (int g = 0; g < pageBytesPerGroup.length; g++) {
            long page = pageBytesPerGroup[g];
            if (page == 0) {
                continue;
            }
            if (first < 0) {
                common = page;
                first = g;
            }
            KvBridgeException.check(page == common, ErrorCode.LAYOUT_UNSUPPORTED,
                    "group %d has pageBytes=%d but group %d has pageBytes=%d; pooled groups need one page size "
                            + "(give both groups the same heads x headSize, or describe them with the 'per-layer' layout)", g, page, first, common);
        }
        checkArgument(first >= 0, "no group has a layer on this stage");
        return common;
    }

    /**
     * Checks that a pool's memory holds a whole number of pages and returns how many.
     *
     * @param pool pool index, for messages.
     * @param poolBytes size of the pool's allocation.
     * @param pageBytes bytes per page.
     * @return the pool's capacity in pages.
     * @throws KvBridgeException {@code LAYOUT_UNSUPPORTED} when it does not divide or holds no page.
     */
    public static int checkCapacity(int pool, long poolBytes, long pageBytes)
    {
        long capacity = poolBytes / pageBytes;
        if (poolBytes % pageBytes != 0 || capacity == 0 || capacity > Integer.MAX_VALUE) {
            throw new KvBridgeException(ErrorCode.LAYOUT_UNSUPPORTED, String.format(Locale.ROOT,
                    "pool %d: allocation bytes=%d is not a positive whole number of pages of pageBytes=%d; allocate capacity x pageBytes bytes per pool",
                    pool, poolBytes, pageBytes));
        }
        return (int) capacity;
    }
}
