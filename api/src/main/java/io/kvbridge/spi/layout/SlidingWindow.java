package io.kvbridge.spi.layout;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import java.util.Arrays;

/**
 * The sliding-window clipping of exchanged block ids, in one place: which trailing blocks of a
 * request a sliding-window group needs, and the ids that remain. Layouts that clip
 * ({@link CacheLayout#exchangedBlocks}) and the connectors that apply the count call these.
 *
 * <p>A window of {@code w} tokens over blocks of {@code t} tokens spans {@code ceil(w / t)} blocks,
 * and may start inside a block, so one block more is kept:
 *
 * <pre>
 *   blocks of 4 tokens, window of 6 tokens ending at the last token:
 *   [ b0 ][ b1 ][ b2 ][ b3 ]
 *                 ..|......    the window covers the end of b2 and all of b3
 *   kept: ceil(6 / 4) + 1 = 3 blocks (b1..b3), enough wherever the window starts
 * </pre>
 *
 * A window smaller than a block still keeps two blocks; a disabled window (0 tokens) keeps none.
 * Ids are always end-trimmed (the last ones kept), as for a prefix-cache hit, so a producer holding
 * more blocks than the consumer exchanges trims to the consumer's count and the two agree.
 */
public final class SlidingWindow
{
    private SlidingWindow()
    {
    }

    /**
     * Returns how many trailing blocks a sliding window spans.
     *
     * @param windowTokens the window in tokens; 0 when the window is disabled.
     * @param blockTokens tokens per block.
     * @return {@code ceil(windowTokens / blockTokens) + 1}, 0 for a disabled window, at most
     *     {@link Integer#MAX_VALUE}.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} naming the value when
     *     {@code windowTokens} is negative or {@code blockTokens} not positive.
     */
    public static int windowBlocks(int windowTokens, int blockTokens)
    {
        checkArgument(windowTokens >= 0, "windowTokens=%d is negative (expected: 0 for a disabled window, or the window in tokens)", windowTokens);
        checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        if (windowTokens == 0) {
            return 0;
        }
        return (int) Math.min(Integer.MAX_VALUE, ((long) windowTokens + blockTokens - 1) / blockTokens + 1);
    }

    /**
     * Returns how many trailing blocks of a group a request holding {@code blocks} blocks exchanges:
     * all of them, except for a {@link GroupKind#SLIDING_WINDOW} group, which exchanges at most
     * {@link #windowBlocks} of its window.
     *
     * @param group the cache group.
     * @param blockTokens tokens per block.
     * @param blocks blocks the request holds in the group.
     * @return the count of trailing blocks exchanged, between 0 and {@code blocks}.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} naming the value when
     *     {@code blockTokens} is not positive or {@code blocks} negative.
     */
    public static int exchangedBlocks(CacheGroup group, int blockTokens, int blocks)
    {
        requireNonNull(group, "group is null");
        checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        checkArgument(blocks >= 0, "blocks=%d is negative", blocks);
        if (group.kind() != GroupKind.SLIDING_WINDOW) {
            return blocks;
        }
        return Math.min(blocks, windowBlocks(group.windowTokens(), blockTokens));
    }

    /**
     * Returns the last {@code keep} ids of a group: the ids a request exchanges once clipped.
     *
     * @param ids the group's block ids in order; not modified.
     * @param keep how many trailing ids to keep, as {@link #exchangedBlocks} says.
     * @return {@code ids} itself when every id is kept, else a copy of its last {@code keep} ids.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} naming both values when
     *     {@code keep} is negative or more than the ids given.
     */
    public static int[] lastIds(int[] ids, int keep)
    {
        requireNonNull(ids, "ids is null");
        checkArgument(keep >= 0 && keep <= ids.length, "keep=%d trailing ids of %d (expected: between 0 and the ids given)", keep, ids.length);
        return keep == ids.length ? ids : Arrays.copyOfRange(ids, ids.length - keep, ids.length);
    }
}
