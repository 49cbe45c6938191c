package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

/**
 * Layers sharing one cache spec. Block ids in requests are given per group.
 *
 * @param id group id, non-negative and unique within a model.
 * @param kind of attention the group's layers use.
 * @param windowTokens window of a {@link GroupKind#SLIDING_WINDOW} group in tokens; 0 when the
 *     window is disabled or the kind has none.
 * @param kvHeads total KV heads of a layer of this group across all tensor-parallel ranks (1 for MLA).
 * @param headSize elements per head (for MLA: the latent width, rope part included).
 */
public record CacheGroup(int id, GroupKind kind, int windowTokens, int kvHeads, int headSize)
{
    /** Validates the values. */
    public CacheGroup
    {
        requireNonNull(kind, "kind is null");
        checkArgument(id >= 0, "group id=%d is negative", id);
        checkArgument(windowTokens >= 0, "windowTokens=%d is negative", windowTokens);
        checkArgument(kind == GroupKind.SLIDING_WINDOW || windowTokens == 0,
                "windowTokens=%d given for a %s group (expected: 0)", windowTokens, kind);
        checkArgument(kvHeads > 0, "kvHeads=%d is not positive", kvHeads);
        checkArgument(headSize > 0, "headSize=%d is not positive", headSize);
        checkArgument(kind != GroupKind.MLA || kvHeads == 1, "an MLA group has one latent head, not kvHeads=%d", kvHeads);
    }

    /**
     * Tells whether the group's blocks are the same on every tensor-parallel rank.
     *
     * @return true for MLA.
     */
    public boolean replicated()
    {
        return kind == GroupKind.MLA;
    }
}
