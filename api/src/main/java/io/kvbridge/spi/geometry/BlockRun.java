package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * A run of consecutive blocks of a {@link Region} that lives apart from the region's other runs:
 * {@code blocks} blocks from {@code base}, one region stride apart. An engine whose cache is made
 * of separately allocated pages (each session's pages mapped on their own, say) describes each
 * region as one run per page, in block-id order.
 *
 * @param base address of the run's first block; positive.
 * @param blocks blocks in the run; positive.
 */
public record BlockRun(long base, int blocks)
{
    /** Validates the values. */
    public BlockRun
    {
        checkArgument(base > 0, "run base=%d is not positive", base);
        checkArgument(blocks > 0, "run of %d blocks (expected: at least one)", blocks);
    }

    /**
     * Returns the address one past the run's last byte.
     *
     * @param stride bytes between the starts of consecutive blocks.
     * @param blockBytes bytes of one block.
     * @return {@code base + (blocks - 1) * stride + blockBytes}.
     */
    public long end(long stride, long blockBytes)
    {
        return base + (blocks - 1L) * stride + blockBytes;
    }
}
