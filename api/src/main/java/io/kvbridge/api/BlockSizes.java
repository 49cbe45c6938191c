package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

/**
 * The scheduler block sizes of a consumer and the producer it receives from, and what a transfer
 * between them leaves unwritten. Sizes may differ when one divides the other: the larger blocks
 * are moved as sub-blocks of the smaller size.
 *
 * <p>When the consumer's blocks are the larger, the producer's last block may end inside the
 * consumer's last block; the tokens after it receive nothing, and an engine that needs them zeroed
 * (attention kernels that read a whole block) zeroes them itself after the receive:
 *
 * <pre>
 *   producer (16-token blocks):  [ p0 ][ p1 ][ p2 ]
 *   consumer (32-token blocks):  [ c0       ][ c1       ]
 *                                             ^^^^^^ tokens 16..31 of c1 are not written
 * </pre>
 *
 * @param consumerBlockTokens tokens of one consumer scheduler block.
 * @param producerBlockTokens tokens of one producer scheduler block.
 */
public record BlockSizes(int consumerBlockTokens, int producerBlockTokens)
{
    /** Validates the sizes: positive, one a multiple of the other. */
    public BlockSizes
    {
        checkArgument(consumerBlockTokens > 0 && producerBlockTokens > 0, "consumerBlockTokens=%d and producerBlockTokens=%d must be positive",
                consumerBlockTokens, producerBlockTokens);
        int larger = Math.max(consumerBlockTokens, producerBlockTokens);
        int smaller = Math.min(consumerBlockTokens, producerBlockTokens);
        KvBridgeException.check(larger % smaller == 0, ErrorCode.GEOMETRY_INCOMPATIBLE,
                "consumer blocks of %d tokens and producer blocks of %d tokens do not divide one another (expected: one a multiple of the other)",
                consumerBlockTokens, producerBlockTokens);
    }

    /**
     * Derives the kernel blocks per scheduler block from an attention backend's kernel block size.
     *
     * @param logicalBlockTokens tokens of the scheduler's (logical) block.
     * @param kernelBlockTokens tokens of the block the attention kernel works in; equal to the
     *     logical size when the cache keeps whole scheduler blocks (packed whole-block mode, as packed
     *     MLA caches with layers of different block sizes do).
     * @return {@code logicalBlockTokens / kernelBlockTokens}.
     * @throws KvBridgeException {@code CONFIG_INVALID} when the kernel block is larger than the
     *     logical one or does not divide it.
     */
    public static int kernelBlocksPerLogical(int logicalBlockTokens, int kernelBlockTokens)
    {
        checkArgument(logicalBlockTokens > 0 && kernelBlockTokens > 0, "logicalBlockTokens=%d and kernelBlockTokens=%d must be positive",
                logicalBlockTokens, kernelBlockTokens);
        KvBridgeException.check(kernelBlockTokens <= logicalBlockTokens, ErrorCode.CONFIG_INVALID,
                "the attention kernel's block of %d tokens is larger than the scheduler's block of %d tokens; configure a scheduler block size that is a "
                        + "multiple of the kernel's, e.g. %d", kernelBlockTokens, logicalBlockTokens, kernelBlockTokens);
        KvBridgeException.check(logicalBlockTokens % kernelBlockTokens == 0, ErrorCode.CONFIG_INVALID,
                "the scheduler's block of %d tokens is not a whole number of the attention kernel's blocks of %d tokens; use a scheduler block size of %d "
                        + "or %d", logicalBlockTokens, kernelBlockTokens, logicalBlockTokens / kernelBlockTokens * kernelBlockTokens,
                (logicalBlockTokens / kernelBlockTokens + 1) * kernelBlockTokens);
        return logicalBlockTokens / kernelBlockTokens;
    }

    /**
     * Returns the tokens at the end of the consumer's last block of one cache group that a transfer
     * leaves unwritten.
     *
     * @param consumerBlocks scheduler blocks the consumer receives into, in the group.
     * @param producerBlocks scheduler blocks the producer holds, in the group.
     * @return 0 when every token of the consumer's blocks is written (equal sizes, or producer blocks
     *     the larger), else the count of trailing tokens of the last block, below
     *     {@code consumerBlockTokens}.
     */
    public int unwrittenTailTokens(int consumerBlocks, int producerBlocks)
    {
        checkArgument(consumerBlocks >= 0 && producerBlocks >= 0, "consumerBlocks=%d and producerBlocks=%d must not be negative", consumerBlocks, producerBlocks);
        if (consumerBlockTokens <= producerBlockTokens || consumerBlocks == 0) {
            return 0;
        }
        int split = consumerBlockTokens / producerBlockTokens;
        // the producer's blocks that cover the consumer's, after a prefix hit of whole consumer blocks
        long covered = producerBlocks - ((producerBlocks + (long) split - 1) / split - consumerBlocks) * split;
        long missing = (long) consumerBlocks * split - Math.max(0, covered);
        checkArgument(missing >= 0 && missing < split, "consumerBlocks=%d need %d producer blocks of %d tokens but producerBlocks=%d (expected: the consumer "
                + "never needs more tokens than the producer computed)", consumerBlocks, (long) consumerBlocks * split, producerBlockTokens, producerBlocks);
        return (int) missing * producerBlockTokens;
    }
}
