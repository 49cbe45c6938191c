package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.HandBacks;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.json.TransferParamsJson;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Rank;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The two-way hand-off over the real local transport: a prefill engine P and a decode engine D, each
 * running a producer and a consumer over one cache (kv_both) on a bridge of its own. Turn 1 moves
 * P's prompt to D; D appends rows, completing the prompt's partial last block, and hands the whole
 * conversation back; P receives only the blocks it lacks.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class HandBackRoundTripTest
{
    private static final int BLOCK_TOKENS = 16;
    private static final int PROMPT_TOKENS = 40;
    private static final int CONVERSATION_TOKENS = 70;
    private static final int PROMPT = 1;
    private static final int DECODED = 2;

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void theDecoderHandsTheConversationBackAndThePrefillReceivesOnlyWhatItLacks(TransferMode mode)
    {
        try (EngineHarness prefill = new EngineHarness(); EngineHarness decode = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(3, 64, false);
            TestCache pCache = prefill.cache(shape, Rank.single());
            TestCache dCache = decode.cache(shape, Rank.single());
            ProducerRank pProducer = prefill.producer("prefill", pCache, true, b -> b);
            ConsumerRank pConsumer = prefill.consumer("prefill", pCache, true, b -> b);
            ProducerRank dProducer = decode.producer("decode", dCache, true, b -> b);
            ConsumerRank dConsumer = decode.consumer("decode", dCache, true, b -> b);

            // turn 1: P prefills 40 tokens into three blocks (the last one partial) and D receives them
            int[] prompt = {0, 1, 2};
            pCache.fill(PROMPT, prompt);
            TransferParams turn1 = viaJson(pProducer.prefillFinished("turn-1", ids(prompt)));
            int[] dBlocks = {10, 11, 12};
            dConsumer.blocksAllocated("d-turn-1", turn1, mode, ids(dBlocks));
            receivedOnce(dConsumer, "d-turn-1");
            dCache.check(PROMPT, dBlocks, 3);
            freedOnce(pProducer, "turn-1");
            HandBacks handBacks = new HandBacks(BLOCK_TOKENS);
            handBacks.keep("chat-7", PROMPT_TOKENS, ids(prompt));

            // D decodes 30 tokens: it completes block 12 and appends blocks 13 and 14, then hands all five back
            dCache.fill(DECODED, 2, new int[] {12, 13, 14});
            TransferParams back = viaJson(dProducer.prefillFinished("hand-back-7", ids(10, 11, 12, 13, 14)));
            assertArrayEquals(new int[] {3}, handBacks.lacking("p-turn-2", "chat-7", back, CONVERSATION_TOKENS));
            // the partial kept block is reused among the lacking ones
            int[] lacking = {2, 20, 21};
            double bytesBefore = movedBytes(prefill.registry) + movedBytes(decode.registry);
            KvBridgeException refused = assertThrows(KvBridgeException.class,
                    () -> handBacks.receive(pConsumer, "p-turn-2", "chat-7", back, CONVERSATION_TOKENS, mode, ids(2, 20)));
            assertEquals(ErrorCode.INVALID_ARGUMENT, refused.code());
            assertTrue(pConsumer.audit().idle(), "a refused hand-back starts nothing: " + pConsumer.audit());
            handBacks.receive(pConsumer, "p-turn-2", "chat-7", back, CONVERSATION_TOKENS, mode, ids(lacking));
            receivedOnce(pConsumer, "p-turn-2");

            pCache.check(DECODED, lacking, 5);
            pCache.check(PROMPT, new int[] {0, 1}, 2);
            pCache.checkZero(new int[] {3, 10, 11, 12, 13, 14, 22});
            double moved = movedBytes(prefill.registry) + movedBytes(decode.registry) - bytesBefore;
            assertEquals(3 * 3 * pCache.rankBlockBytes, (long) moved, "only the three lacking blocks of three layers move");
            assertEquals(ids(0, 1, 2, 20, 21), handBacks.table("chat-7", ids(lacking)));
            freedOnce(dProducer, "hand-back-7");
            await(() -> pProducer.audit().idle() && pConsumer.audit().idle() && dProducer.audit().idle() && dConsumer.audit().idle(), "idle audits");
        }
    }

    /**
     * P runs two pipeline stages in one process, D one rank: turn 1 moves both stages' layers to D,
     * and the hand-back from D's single stage reaches each of P's stages, which receive their own layers.
     */
    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aHandBackFromOneStageReachesEachStageOfAPipelinedPrefill(TransferMode mode)
    {
        try (EngineHarness prefill = new EngineHarness(); EngineHarness decode = new EngineHarness()) {
            TestCache.Shape staged = TestCache.Shape.of(4, 32, false).stages(2, 2);
            List<TestCache> stageCaches = List.of(prefill.cache(staged, new Rank(0, 2, 0, 1)), prefill.cache(staged, new Rank(1, 2, 0, 1)));
            List<ProducerRank> stageProducers = new ArrayList<>();
            List<ConsumerRank> stageConsumers = new ArrayList<>();
            for (TestCache cache : stageCaches) {
                stageProducers.add(prefill.producer("prefill-pp2", cache, true, b -> b.cacheSpec(cache.spec)));
                stageConsumers.add(prefill.consumer("prefill-pp2", cache, true, b -> b.cacheSpec(cache.spec)));
                cache.fill(PROMPT, new int[] {4, 5, 6});
            }
            TestCache dCache = decode.cache(TestCache.Shape.of(4, 32, false), Rank.single());
            ProducerRank dProducer = decode.producer("decode-pp1", dCache, true, b -> b.cacheSpec(dCache.spec));
            ConsumerRank dConsumer = decode.consumer("decode-pp1", dCache, true, b -> b.cacheSpec(dCache.spec));

            TransferParams turn1 = stageProducers.get(0).prefillFinished("turn-1", ids(4, 5, 6));
            turn1 = viaJson(turn1.withEpochsOf(stageProducers.get(1).prefillFinished("turn-1", ids(4, 5, 6))));
            dConsumer.blocksAllocated("d-turn-1", turn1, mode, ids(1, 2, 3));
            receivedOnce(dConsumer, "d-turn-1");
            dCache.check(PROMPT, new int[] {1, 2, 3}, 3);
            HandBacks handBacks = new HandBacks(BLOCK_TOKENS);
            handBacks.keep("chat-9", PROMPT_TOKENS, ids(4, 5, 6));

            dCache.fill(DECODED, 2, new int[] {3, 7, 8});
            TransferParams back = viaJson(dProducer.prefillFinished("hand-back-9", ids(1, 2, 3, 7, 8)));
            BlockIds lacking = ids(6, 9, 10);
            for (ConsumerRank stage : stageConsumers) {
                handBacks.receive(stage, "p-turn-2", "chat-9", back, CONVERSATION_TOKENS, mode, lacking);
            }
            for (int stage = 0; stage < 2; stage++) {
                receivedOnce(stageConsumers.get(stage), "p-turn-2");
                stageCaches.get(stage).check(DECODED, lacking.group(0), 5);
                stageCaches.get(stage).check(PROMPT, new int[] {4, 5}, 2);
            }
            freedOnce(dProducer, "hand-back-9");
            for (ProducerRank stage : stageProducers) {
                freedOnce(stage, "turn-1");
            }
            await(() -> stageConsumers.stream().allMatch(c -> c.audit().idle()) && stageProducers.stream().allMatch(p -> p.audit().idle())
                    && dProducer.audit().idle() && dConsumer.audit().idle(), "idle audits");
        }
    }

    private static TransferParams viaJson(TransferParams params)
    {
        return TransferParamsJson.read(TransferParamsJson.write(params));
    }

    private static void receivedOnce(ConsumerRank consumer, String requestId)
    {
        List<String> received = new ArrayList<>();
        List<ReceiveFailure> failed = new ArrayList<>();
        await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, requestId + " received");
        assertEquals(List.of(), failed);
        assertEquals(List.of(requestId), received);
    }

    private static void freedOnce(ProducerRank producer, String requestId)
    {
        List<FreedRequest> freed = new ArrayList<>();
        await(() -> EngineHarness.drain(producer, freed).size() == 1, requestId + " freed");
        assertEquals(List.of(new FreedRequest(requestId, FreeReason.COMPLETED)), freed);
        await(() -> producer.audit().idle(), requestId + " released");
        assertEquals(List.of(), producer.poll(), "reported once");
    }

    private static double movedBytes(SimpleMeterRegistry registry)
    {
        var summary = registry.find("kvbridge.transfer.bytes").summary();
        return summary == null ? 0 : summary.totalAmount();
    }
}
