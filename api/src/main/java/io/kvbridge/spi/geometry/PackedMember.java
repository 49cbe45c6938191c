package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

/**
 * One layer's page inside a packed (block-outermost) region: the bytes of this layer within each
 * block of the region.
 *
 * @param layer the member layer's global name.
 * @param offset of the layer's page from the start of each block, in bytes.
 * @param pageBytes length of the layer's page, in bytes.
 */
public record PackedMember(String layer, long offset, long pageBytes)
{
    /** Validates the values. */
    public PackedMember
    {
        requireNonNull(layer, "layer is null");
        checkArgument(!layer.isEmpty(), "layer name is empty");
        checkArgument(offset >= 0, "offset=%d of layer %s is negative", offset, layer);
        checkArgument(pageBytes > 0, "pageBytes=%d of layer %s is not positive", pageBytes, layer);
    }
}
