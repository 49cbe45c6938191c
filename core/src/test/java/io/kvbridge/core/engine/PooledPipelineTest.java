package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Push from a pipeline-parallel producer whose hybrid-allocator pools differ from the decoder's:
 * layers are routed by name, every byte of every layer arrives where the decoder's own pools keep it
 * and nothing else changes, and each decoder rank waits for exactly the producer stages that write it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class PooledPipelineTest
{
    private static final int CAPACITY = 24;

    @Test
    void pp2ProducerPushesIntoPp1DecoderWithOtherPools()
    {
        run(List.of(15, 15), List.of(30), new int[] {2});
    }

    @Test
    void pp2ProducerPushesIntoPp2DecoderSplitElsewhere()
    {
        // decoder stage 0 (layers 0..9) is written by producer stage 0 only, stage 1 (10..29) by both
        run(List.of(15, 15), List.of(10, 20), new int[] {1, 2});
    }

    @Test
    void aDecoderStageWithoutTheCacheSpecIsRefusedAtStart()
    {
        try (EngineHarness harness = new EngineHarness()) {
            PooledCache stage = new PooledCache(harness.arena, List.of(10, 20), 1, CAPACITY);
            KvBridgeException refused = assertThrows(KvBridgeException.class,
                    () -> new ConsumerRank(harness.services, ConnectorSettings.builder("decode", stage.geometry).build(), false));
            assertEquals(ErrorCode.CONFIG_INVALID, refused.code());
            assertTrue(refused.getMessage().contains("cacheSpec"), refused.getMessage());
            KvBridgeException mismatch = assertThrows(KvBridgeException.class,
                    () -> ConnectorSettings.builder("decode", stage.geometry).cacheSpec(new PooledCache(harness.arena, List.of(30), 0, CAPACITY).spec).build());
            assertEquals(ErrorCode.CONFIG_INVALID, mismatch.code());
        }
    }

    private static void run(List<Integer> producerSplit, List<Integer> decoderSplit, int[] expectedWriters)
    {
        try (EngineHarness harness = new EngineHarness()) {
            List<PooledCache> producerCaches = new ArrayList<>();
            List<ProducerRank> producers = new ArrayList<>();
            for (int stage = 0; stage < producerSplit.size(); stage++) {
                PooledCache cache = new PooledCache(harness.arena, producerSplit, stage, CAPACITY);
                producerCaches.add(cache);
                producers.add(register(harness, new ProducerRank(harness.services, settings("prefill", cache), true)));
            }
            List<PooledCache> decoderCaches = new ArrayList<>();
            List<ConsumerRank> decoders = new ArrayList<>();
            for (int stage = 0; stage < decoderSplit.size(); stage++) {
                PooledCache cache = new PooledCache(harness.arena, decoderSplit, stage, CAPACITY);
                decoderCaches.add(cache);
                decoders.add(register(harness, new ConsumerRank(harness.services, settings("decode", cache), true)));
            }
            List<String> lastStagePool = producerCaches.getLast().geometry.regions().getFirst().members();
            for (PooledCache decoder : decoderCaches) {
                assertTrue(decoder.geometry.regions().stream().noneMatch(region -> region.members().equals(lastStagePool)),
                        "the sides pool differently: no decoder pool is " + lastStagePool);
            }

            // three blocks per group on the producer, other block ids on the decoder
            int[][] producerIds = {{1, 2, 3}, {4, 5, 6}};
            int[][] decoderIds = {{7, 9, 11}, {20, 13, 15}};
            for (PooledCache cache : producerCaches) {
                cache.fill(5, producerIds);
            }
            // producer stage 0 finishes first: it writes every decoder stage, which completes only the stages it alone writes
            TransferParams params = producers.getFirst().prefillFinished("req-5", BlockIds.of(producerIds));
            for (ConsumerRank decoder : decoders) {
                decoder.blocksAllocated("dec-5", params, TransferMode.PUSH, BlockIds.of(decoderIds));
            }
            await(() -> writes(harness) == decoders.size(), "stage 0 writes every decoder stage");
            List<List<String>> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            for (int stage = 0; stage < decoders.size(); stage++) {
                ConsumerRank decoder = decoders.get(stage);
                List<String> got = new ArrayList<>();
                received.add(got);
                if (expectedWriters[stage] == 1) {
                    await(() -> EngineHarness.collect(decoder, got, failed) != null && !got.isEmpty(), "decoder stage written by stage 0 alone");
                }
            }
            sleep(200);
            for (int stage = 0; stage < decoders.size(); stage++) {
                EngineHarness.collect(decoders.get(stage), received.get(stage), failed);
                assertEquals(expectedWriters[stage] == 1 ? List.of("dec-5") : List.of(), received.get(stage),
                        "decoder stage " + stage + " waits for " + expectedWriters[stage] + " producer stages");
            }
            for (int stage = 1; stage < producers.size(); stage++) {
                producers.get(stage).prefillFinished("req-5", BlockIds.of(producerIds));
            }
            for (int stage = 0; stage < decoders.size(); stage++) {
                ConsumerRank decoder = decoders.get(stage);
                List<String> got = received.get(stage);
                await(() -> EngineHarness.collect(decoder, got, failed) != null && (got.size() + failed.size()) >= 1, "decoder stage received");
                assertEquals(List.of(), failed);
                assertEquals(List.of("dec-5"), got);
                assertEquals(0, decoderCaches.get(stage).mismatches(5, decoderIds), "wrong bytes on decoder stage " + stage);
            }
            for (ProducerRank producer : producers) {
                List<FreedRequest> freed = new ArrayList<>();
                await(() -> EngineHarness.drain(producer, freed).size() == 1, "producer freed on the acknowledgement");
                assertEquals(new FreedRequest("req-5", FreeReason.COMPLETED), freed.getFirst());
            }
            assertEquals(Arrays.stream(expectedWriters).sum(), writes(harness), "one write per producer stage and decoder stage that share layers");
        }
    }

    private static long writes(EngineHarness harness)
    {
        var timer = harness.registry.find("kvbridge.transfer.time").timer();
        return timer == null ? 0 : timer.count();
    }

    private static void sleep(long millis)
    {
        try {
            Thread.sleep(millis);
        }
        catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    private static ConnectorSettings settings(String engineId, PooledCache cache)
    {
        return ConnectorSettings.builder(engineId, cache.geometry).cacheSpec(cache.spec).build();
    }

    private static <T extends AutoCloseable> T register(EngineHarness harness, T rank)
    {
        harness.own(rank);
        return rank;
    }
}
