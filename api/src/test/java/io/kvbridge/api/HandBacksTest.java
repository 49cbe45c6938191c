package io.kvbridge.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.BackendResources;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

final class HandBacksTest
{
    private static final int BLOCK_TOKENS = 16;

    /** 40 tokens kept: group 0 positional (two whole blocks and a partial one), group 1 a recurrent state. */
    private static HandBacks kept()
    {
        HandBacks handBacks = new HandBacks(BLOCK_TOKENS);
        handBacks.keep("chat-1", 40, BlockIds.of(new int[] {3, 8, 5}, new int[0]));
        return handBacks;
    }

    private static TransferParams handBack(BlockIds blocks)
    {
        return new TransferParams("decoder", "turn-1", List.of(new SideChannelAddress("127.0.0.1", 5600)), 1, 1, blocks, Set.of(TransferMode.PULL),
                30_000);
    }

    private static final TransferParams FIVE_BLOCKS = handBack(BlockIds.of(new int[] {21, 22, 23, 24, 25}, new int[] {40}));

    @Test
    void lackingCountsTheHandBacksBlocksPastTheWholeKeptOnes()
    {
        HandBacks handBacks = kept();
        assertArrayEquals(new int[] {3, 1}, handBacks.lacking("p-2", "chat-1", FIVE_BLOCKS, 70),
                "two whole kept blocks of five; the partial third was completed by the decoder; the recurrent group keeps none");
        handBacks.keep("chat-1", 48, BlockIds.of(new int[] {3, 8, 5}, new int[0]));
        assertArrayEquals(new int[] {2, 1}, handBacks.lacking("p-2", "chat-1", FIVE_BLOCKS, 70), "three whole blocks once 48 tokens are kept");
    }

    @Test
    void receiveChecksThenAllocatesTheLackingBlocks()
    {
        HandBacks handBacks = kept();
        RecordingConsumer consumer = new RecordingConsumer();
        BlockIds lacking = BlockIds.of(new int[] {5, 9, 11}, new int[] {2});
        handBacks.receive(consumer, "p-2", "chat-1", FIVE_BLOCKS, 70, TransferMode.PUSH, lacking);
        assertEquals(List.of("p-2 PUSH " + lacking), consumer.calls);
        assertEquals(BlockIds.of(new int[] {3, 8, 5, 9, 11}, new int[] {2}), handBacks.table("chat-1", lacking),
                "whole kept blocks, then the lacking ones");
    }

    @Test
    void keepReplacesForgetDropsAndSizeCounts()
    {
        HandBacks handBacks = kept();
        assertEquals(OptionalLong.of(40), handBacks.keptTokens("chat-1"));
        handBacks.keep("chat-1", 64, BlockIds.of(new int[] {3, 8, 5, 9}, new int[0]));
        handBacks.keep("chat-2", 16, BlockIds.of(new int[] {1}, new int[0]));
        assertEquals(2, handBacks.size());
        assertEquals(OptionalLong.of(64), handBacks.keptTokens("chat-1"));
        assertEquals(BlockIds.of(new int[] {3, 8, 5, 9}, new int[0]), handBacks.keptBlocks("chat-1").orElseThrow());
        assertTrue(handBacks.forget("chat-1"));
        assertFalse(handBacks.forget("chat-1"));
        assertEquals(OptionalLong.empty(), handBacks.keptTokens("chat-1"));
        assertEquals(1, handBacks.size());
    }

    @Test
    void keepRefusesMoreBlocksThanItsTokensFill()
    {
        HandBacks handBacks = new HandBacks(BLOCK_TOKENS);
        refused(() -> handBacks.keep("chat-1", 17, BlockIds.of(new int[] {1, 2, 3})), "keeps 3 blocks in group 0 but its 17 tokens fill only 2");
        refused(() -> handBacks.keep("chat-1", -1, BlockIds.of(new int[0])), "tokens=-1");
        refused(() -> handBacks.keep("chat\n1", 1, BlockIds.of(new int[] {1})), "U+000A");
        assertEquals(0, handBacks.size());
    }

    @Test
    void refusesASessionItDoesNotKeep()
    {
        refusedBeforeAnythingMoves("p-2", "chat-9", FIVE_BLOCKS, 70, BlockIds.of(new int[] {1, 2, 3}, new int[] {4}),
                "hand-back p-2 names session chat-9, which this engine does not keep");
    }

    @Test
    void refusesAHandBackForAnotherNumberOfGroups()
    {
        refusedBeforeAnythingMoves("p-2", "chat-1", handBack(BlockIds.of(new int[] {21, 22, 23, 24, 25})), 70, BlockIds.of(new int[] {1, 2, 3}),
                "hand-back p-2 of session chat-1 lists 1 cache groups but the session keeps 2");
    }

    @Test
    void refusesAHandBackCoveringFewerTokensThanKept()
    {
        refusedBeforeAnythingMoves("p-2", "chat-1", FIVE_BLOCKS, 39, BlockIds.of(new int[] {1, 2, 3}, new int[] {4}),
                "hand-back p-2 of session chat-1 covers 39 tokens, fewer than the 40 kept");
    }

    @Test
    void refusesAHandBackCoveringMoreTokensThanItsBlocksHold()
    {
        refusedBeforeAnythingMoves("p-2", "chat-1", FIVE_BLOCKS, 81, BlockIds.of(new int[] {1, 2, 3}, new int[] {4}),
                "hand-back p-2 of session chat-1 covers 81 tokens but group 0 lists 5 blocks, which hold 80");
    }

    @Test
    void refusesLackingBlocksOfAnotherCountThanPlanned()
    {
        refusedBeforeAnythingMoves("p-2", "chat-1", FIVE_BLOCKS, 70, BlockIds.of(new int[] {1, 2}, new int[] {4}),
                "hand-back p-2 of session chat-1: group 0 lists 2 lacking blocks but 3 are lacking");
        refusedBeforeAnythingMoves("p-2", "chat-1", FIVE_BLOCKS, 70, BlockIds.of(new int[] {1, 2, 3}),
                "hand-back p-2 of session chat-1: lacking blocks list 1 groups but the hand-back has 2");
    }

    @Test
    void refusesAMalformedRequestId()
    {
        refusedBeforeAnythingMoves("p 2", "chat-1", FIVE_BLOCKS, 70, BlockIds.of(new int[] {1, 2, 3}, new int[] {4}),
                "hand-back of session chat-1 refused: request id p 2 holds character 0x20");
        refusedBeforeAnythingMoves("HB:2", "chat-1", FIVE_BLOCKS, 70, BlockIds.of(new int[] {1, 2, 3}, new int[] {4}), "reserved prefix");
    }

    private static void refusedBeforeAnythingMoves(String requestId, String sessionId, TransferParams params, long tokens, BlockIds lacking,
            String message)
    {
        HandBacks handBacks = kept();
        RecordingConsumer consumer = new RecordingConsumer();
        refused(() -> handBacks.receive(consumer, requestId, sessionId, params, tokens, TransferMode.PULL, lacking), message);
        assertEquals(List.of(), consumer.calls, "nothing may move after a refusal");
        assertEquals(OptionalLong.of(40), handBacks.keptTokens("chat-1"), "a refusal leaves the record as it was");
    }

    private static void refused(Executable call, String message)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, call);
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains(message), () -> "message " + e.getMessage() + " lacks " + message);
    }

    /** Records what a consumer was asked to receive. */
    private static final class RecordingConsumer implements ConsumerConnector
    {
        private final List<String> calls = new ArrayList<>();

        @Override
        public void blocksAllocated(String requestId, TransferParams params, TransferMode mode, BlockIds blocks)
        {
            calls.add(requestId + " " + mode + " " + blocks);
        }

        @Override
        public ReceiveBatch poll()
        {
            return ReceiveBatch.EMPTY;
        }

        @Override
        public boolean inspect(String requestId, RequestView into)
        {
            return false;
        }

        @Override
        public ConnectorAudit audit()
        {
            return new ConnectorAudit(calls.size(), 0, 0, 0, 0, BackendResources.NONE);
        }

        @Override
        public void close()
        {
        }
    }
}
