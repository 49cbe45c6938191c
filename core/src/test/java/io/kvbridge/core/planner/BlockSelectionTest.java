package io.kvbridge.core.planner;

import static io.kvbridge.core.planner.Errors.assertError;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

final class BlockSelectionTest
{
    @Test
    void logicalBlocksExpandToKernelBlocks()
    {
        BlockSelection blocks = BlockSelection.of(new int[] {0, 1, 2}, new int[] {3, 4}).expandToKernel(2);
        assertArrayEquals(range(0, 6), blocks.toArray(0));
        assertArrayEquals(range(6, 10), blocks.toArray(1));
    }

    @Test
    void ratioSplitsLocalBlocksAndClipsToTheRemoteLength()
    {
        // consumer blocks of 64 tokens, producer blocks of 16: 3 consumer blocks cover the producer's 10
        BlockSelection remote = BlockSelection.of(range32(30, 40), new int[] {42});
        BlockSelection local = BlockSelection.of(new int[] {1, 2, 3}, new int[] {7}).indivisible(1);
        BlockSelection.align(local, 64, 64, remote, 16, 16);
        assertArrayEquals(range(4, 14), local.toArray(0));
        assertArrayEquals(range(30, 40), remote.toArray(0));
        assertArrayEquals(new long[] {7}, local.toArray(1));
        assertArrayEquals(new long[] {42}, remote.toArray(1));
    }

    @Test
    void ratioWithoutIndivisibleGroupsSplitsEveryGroup()
    {
        BlockSelection remote = BlockSelection.of(range32(0, 10), range32(0, 3));
        BlockSelection local = BlockSelection.of(new int[] {1, 2, 3}, new int[] {7});
        BlockSelection.align(local, 64, 64, remote, 16, 16);
        assertArrayEquals(range(28, 31), local.toArray(1));
    }

    @Test
    void producerBlocksAreTrimmedAtTheFrontToTheConsumersNeed()
    {
        BlockSelection consumer = BlockSelection.of(new int[] {500, 501});
        BlockSelection producer = BlockSelection.of(new int[] {10, 11, 12, 13, 14}).keepLast(consumer);
        assertArrayEquals(new long[] {13, 14}, producer.toArray(0));
        assertArrayEquals(new long[] {500, 501}, consumer.toArray(0));
    }

    @Test
    void trimmingComposesWithKernelExpansion()
    {
        BlockSelection consumer = BlockSelection.of(new int[] {9}).expandToKernel(2);
        BlockSelection producer = BlockSelection.of(new int[] {4, 5}).expandToKernel(2).keepLast(consumer);
        assertArrayEquals(new long[] {10, 11}, producer.toArray(0));
        assertArrayEquals(new long[] {18, 19}, consumer.toArray(0));
    }

    @Test
    void aConsumerNeverNeedsMoreThanTheProducerHolds()
    {
        BlockSelection producer = BlockSelection.of(new int[] {1});
        assertError(ErrorCode.LENGTH_MISMATCH, () -> producer.keepLast(BlockSelection.of(new int[] {1, 2})), "needs 2 blocks", "only 1");
        BlockSelection state = BlockSelection.of(new int[] {1, 2}).indivisible(0);
        assertError(ErrorCode.UNSUPPORTED, () -> state.keepLast(BlockSelection.of(new int[] {1})), "indivisible");
        assertError(ErrorCode.LENGTH_MISMATCH, () -> producer.keepLast(BlockSelection.of(new int[] {1}, new int[] {2})), "groups=2");
    }

    @Test
    void aFullPrefixHitLeavesNothing()
    {
        BlockSelection remote = BlockSelection.of(new int[] {1}, new int[] {2});
        BlockSelection local = BlockSelection.of(new int[0], new int[0]);
        BlockSelection.align(local, 32, 32, remote, 16, 16);
        assertTrue(local.isEmpty());
        assertTrue(remote.isEmpty());
        assertEquals(0, local.total());
        BlockSelection none = BlockSelection.of(new int[0], new int[0]);
        assertError(ErrorCode.LENGTH_MISMATCH, () -> BlockSelection.align(BlockSelection.of(new int[] {1}, new int[0]), 32, 32, none, 16, 16),
                "needs 1 blocks of 32 tokens", "holds only 0 of 16 tokens");
        assertFalse(BlockSelection.of(new int[0], new int[] {1}).isEmpty());
    }

    @Test
    void selectionsAreReusedWithoutCopying()
    {
        BlockSelection blocks = new BlockSelection(1);
        int[] ids = {5, 6, 7, 8};
        blocks.select(0, ids, 2).expandToKernel(2);
        assertArrayEquals(new long[] {10, 11, 12, 13}, blocks.toArray(0));
        blocks.select(new int[][] {ids});
        assertArrayEquals(new long[] {5, 6, 7, 8}, blocks.toArray(0));
        assertEquals(7, blocks.id(0, 2));
        assertError(ErrorCode.INVALID_ARGUMENT, () -> blocks.id(0, 4), "position=4");
        assertError(ErrorCode.INVALID_ARGUMENT, () -> blocks.select(0, ids, 5), "length=5");
        assertError(ErrorCode.INVALID_ARGUMENT, () -> blocks.select(new int[][] {ids, ids}), "2 groups");
    }

    private static long[] range(int from, int to)
    {
        return LongStream.range(from, to).toArray();
    }

    private static int[] range32(int from, int to)
    {
        return java.util.stream.IntStream.range(from, to).toArray();
    }
}
