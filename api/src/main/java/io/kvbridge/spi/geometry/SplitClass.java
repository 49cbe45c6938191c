package io.kvbridge.spi.geometry;

/** How a region's block is divided among tensor-parallel ranks. */
public enum SplitClass
{
    /**
     * Heads are sharded across ranks and each head's bytes of a block are contiguous (heads
     * outermost), so a rank's share of a block is one contiguous byte range.
     */
    SPLIT,
    /** The whole block is the same on every rank (MLA latent); never sliced. */
    REPLICATE,
    /**
     * Heads are sharded across ranks but interleaved inside a block (tokens outermost): blocks can
     * only be moved between peers of equal tensor-parallel size.
     */
    INTERLEAVED
}
