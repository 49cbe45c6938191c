package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

/**
 * A layer that owns KV.
 *
 * @param name global layer name, the same on every pipeline stage (never stage-local).
 * @param groupId the cache group the layer belongs to.
 */
public record LayerSpec(String name, int groupId)
{
    /** Validates the values. */
    public LayerSpec
    {
        requireNonNull(name, "name is null");
        checkArgument(!name.isEmpty(), "layer name is empty");
        checkArgument(groupId >= 0, "layer %s: groupId=%d is negative", name, groupId);
    }
}
