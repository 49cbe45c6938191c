package io.kvbridge.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.ErrorCode;
import org.junit.jupiter.api.Test;

class KeptTokensTest
{
    private static ReceiveFailure failure(BlockIds invalid)
    {
        return new ReceiveFailure("r", ErrorCode.TRANSFER_FAILED, "failed", invalid, FailurePolicy.RECOMPUTE, 0);
    }

    @Test
    void eachGroupKeepsTheBlocksBeforeItsFirstInvalidOne()
    {
        BlockIds requested = BlockIds.of(new int[] {4, 5, 6, 7}, new int[] {9, 10, 11, 12});
        ReceiveFailure failure = failure(BlockIds.of(new int[0], new int[] {12, 11}));
        assertArrayEquals(new long[] {64, 32}, KeptTokens.perGroup(failure, requested, 16));
        assertEquals(32, KeptTokens.kept(failure, requested, 16), "recompute from token 32");
    }

    @Test
    void anEmptyGroupDoesNotLimitTheRequest()
    {
        BlockIds requested = BlockIds.of(new int[] {1, 2, 3}, new int[0]);
        ReceiveFailure failure = failure(BlockIds.of(new int[] {3}, new int[0]));
        assertEquals(32, KeptTokens.kept(failure, requested, 16));
        assertEquals(0, KeptTokens.kept(failure(BlockIds.of(new int[0], new int[0])), BlockIds.of(new int[0], new int[0]), 16));
    }

    @Test
    void everyBlockInvalidKeepsNothing()
    {
        BlockIds requested = BlockIds.of(new int[] {1, 2}, new int[] {3});
        assertEquals(0, KeptTokens.kept(failure(requested), requested, 16));
    }
}
