package io.kvbridge.spi.layout;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.geometry.StridedBlocks;

/**
 * Where an engine placed one layer's KV tensor: a strided view into an allocation. Layers may share
 * an allocation (pools, packed layouts) or alias each other (the same view given for two layers).
 *
 * @param layer global layer name.
 * @param address of the layer's block 0.
 * @param blockBytes bytes of one block of this layer.
 * @param blockStride bytes between the starts of consecutive blocks of this layer.
 * @param blocks number of blocks the view holds.
 */
public record LayerView(String layer, long address, long blockBytes, long blockStride, int blocks)
{
    /** Validates the values. */
    public LayerView
    {
        requireNonNull(layer, "layer is null");
        checkArgument(!layer.isEmpty(), "layer name is empty");
        checkArgument(address > 0, "layer %s: address=%d is not positive", layer, address);
        checkArgument(blockBytes > 0, "layer %s: blockBytes=%d is not positive", layer, blockBytes);
        checkArgument(blockStride >= blockBytes, "layer %s: blockStride=%d is smaller than blockBytes=%d", layer, blockStride, blockBytes);
        checkArgument(blocks > 0, "layer %s: blocks=%d is not positive", layer, blocks);
        // (blocks - 1) * blockStride + blockBytes <= blocks * blockStride, so this bound keeps end() in range
        checkArgument(blockStride <= (Long.MAX_VALUE - address) / blocks,
                "layer %s: address=0x%x + (blocks=%d - 1) * blockStride=%d + blockBytes=%d overflows a 64-bit address",
                layer, address, blocks, blockStride, blockBytes);
    }

    /**
     * Returns the address of one of the layer's blocks.
     *
     * @param block index in {@code [0, blocks)}.
     * @return {@code address + block * blockStride}.
     */
    public long blockAddress(int block)
    {
        return address + block * blockStride;
    }

    /**
     * Tells whether two views share a byte of their blocks ({@link StridedBlocks#shareBytes}):
     * views that interleave inside one allocation share none although their extents overlap.
     *
     * @param other another view.
     * @return true when some block of one overlaps some block of the other.
     */
    public boolean sharesBytesWith(LayerView other)
    {
        return StridedBlocks.shareBytes(address, blockBytes, blockStride, blocks, other.address, other.blockBytes, other.blockStride, other.blocks);
    }

    /**
     * Returns the address one past the last byte of the last block.
     *
     * @return {@code address + (blocks - 1) * blockStride + blockBytes}.
     */
    public long end()
    {
        return address + (blocks - 1L) * blockStride + blockBytes;
    }
}
