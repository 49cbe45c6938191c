package io.kvbridge.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

final class BlockSizesTest
{
    @Test
    void kernelBlocksDivideTheSchedulerBlock()
    {
        assertEquals(4, BlockSizes.kernelBlocksPerLogical(64, 16));
        assertEquals(1, BlockSizes.kernelBlocksPerLogical(32, 32));
        KvBridgeException larger = assertThrows(KvBridgeException.class, () -> BlockSizes.kernelBlocksPerLogical(16, 32));
        assertEquals(ErrorCode.CONFIG_INVALID, larger.code());
        assertTrue(larger.getMessage().contains("block of 32 tokens is larger than the scheduler's block of 16 tokens"), larger.getMessage());
        KvBridgeException uneven = assertThrows(KvBridgeException.class, () -> BlockSizes.kernelBlocksPerLogical(48, 32));
        assertTrue(uneven.getMessage().contains("use a scheduler block size of 32 or 64"), uneven.getMessage());
        assertEquals(ErrorCode.GEOMETRY_INCOMPATIBLE, assertThrows(KvBridgeException.class, () -> new BlockSizes(48, 32)).code());
    }

    @Test
    void theProducerKeepsTheBlocksCoveringWhatTheConsumerStillNeeds()
    {
        // consumer blocks of 32, producer of 16: a 40-token prompt is 2 consumer and 3 producer blocks
        assertEquals(3, BlockSizes.producerBlocksKept(32, 16, 2, 3));
        // a prefix hit of one consumer block skips two producer blocks
        assertEquals(1, BlockSizes.producerBlocksKept(32, 16, 1, 3));
        assertEquals(0, BlockSizes.producerBlocksKept(32, 16, 0, 3));
        assertEquals(-1, BlockSizes.producerBlocksKept(32, 16, 3, 3));
        // producer blocks of 64, consumer of 16: 5 consumer blocks lie in the producer's last 2
        assertEquals(2, BlockSizes.producerBlocksKept(16, 64, 5, 3));
        assertEquals(-1, BlockSizes.producerBlocksKept(16, 64, 13, 3));
        assertEquals(2, BlockSizes.producerBlocksKept(16, 16, 2, 5));
    }

    @Test
    void onlyALargerConsumerBlockHasAnUnwrittenTail()
    {
        BlockSizes larger = new BlockSizes(32, 16);
        assertEquals(16, larger.unwrittenTailTokens(2, 3), "producer block 3 ends half way through consumer block 2");
        assertEquals(0, larger.unwrittenTailTokens(2, 4));
        assertEquals(0, larger.unwrittenTailTokens(0, 3));
        assertEquals(0, new BlockSizes(16, 64).unwrittenTailTokens(5, 2));
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(KvBridgeException.class, () -> larger.unwrittenTailTokens(3, 3)).code());
    }
}
