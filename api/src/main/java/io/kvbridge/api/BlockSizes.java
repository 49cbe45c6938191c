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
        int kept = producerBlocksKept(consumerBlockTokens, producerBlockTokens, consumerBlocks, producerBlocks);
        checkArgument(kept >= 0, "consumerBlocks=%d of %d tokens need more than producerBlocks=%d of %d tokens hold (expected: the consumer never needs "
                + "more tokens than the producer computed)", consumerBlocks, consumerBlockTokens, producerBlocks, producerBlockTokens);
        if (consumerBlockTokens <= producerBlockTokens) {
            return 0;
        }
        return (int) ((long) consumerBlocks * consumerBlockTokens - (long) kept * producerBlockTokens);
    }

    /**
     * Returns how many of the producer's last blocks hold the tokens a consumer still needs: a
     * consumer that skipped {@code k} of its blocks (prefix hit) skipped {@code k} of its own block
     * sizes of tokens, counted from the start of the prompt on both sides.
     *
     * <ul>
     * <li>Consumer blocks {@code m} times the producer's: {@code P - (ceil(P / m) - C) x m} of the
     * producer's {@code P} blocks, none when {@code C} is 0.
     * <li>Producer blocks {@code m} times the consumer's: {@code ceil(C / m)}, which is exact when a
     * prefix hit covers whole producer blocks (block counts cannot show otherwise).
     * <li>Equal sizes: {@code C}.
     * </ul>
     *
     * @param consumerBlockTokens tokens of a consumer scheduler block.
     * @param producerBlockTokens tokens of a producer scheduler block; one size divides the other.
     * @param consumerBlocks scheduler blocks the consumer still needs.
     * @param producerBlocks scheduler blocks the producer holds.
     * @return the producer blocks to move, or -1 when they cannot cover the consumer's need.
     */
    public static int producerBlocksKept(int consumerBlockTokens, int producerBlockTokens, int consumerBlocks, int producerBlocks)
    {
        if (consumerBlockTokens >= producerBlockTokens) {
            int m = consumerBlockTokens / producerBlockTokens;
            long covering = (producerBlocks + (long) m - 1) / m;
            if (consumerBlocks > covering) {
                return -1;
            }
            return consumerBlocks == 0 ? 0 : (int) (producerBlocks - (covering - consumerBlocks) * m);
        }
        int m = producerBlockTokens / consumerBlockTokens;
        int kept = (int) ((consumerBlocks + (long) m - 1) / m);
        return kept > producerBlocks ? -1 : kept;
    }
}
