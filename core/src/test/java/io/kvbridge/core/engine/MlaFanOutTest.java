package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Replicated (MLA) blocks moved into a decoder with more tensor-parallel ranks than the producer,
 * in both modes, over the real {@code local} transport: every decoder rank gets its copy, from the
 * producer rank {@code d / (consumerTp / producerTp)}, every producer rank frees once, and both
 * engines end idle. A model mixing MLA with head-sharded attention moves the same way (each
 * decoder rank takes its heads and the whole latent from one producer rank); sizes that cannot
 * shard its heads are refused before any registration is sent.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class MlaFanOutTest
{
    private static final int LAYERS = 3;
    private static final int[] PRODUCER_BLOCKS = {2, 3, 4, 5};
    private static final int[] CONSUMER_BLOCKS = {9, 10, 11, 12};

    @ParameterizedTest(name = "{0}: producer tp{1} -> consumer tp{2}, with attention layers: {3}")
    @CsvSource({"PUSH, 1, 4, false", "PUSH, 2, 4, false", "PUSH, 1, 2, false", "PUSH, 2, 6, false", "PULL, 1, 4, false", "PULL, 2, 4, false",
            "PULL, 1, 2, false", "PUSH, 1, 4, true", "PUSH, 2, 4, true", "PUSH, 1, 2, true", "PULL, 2, 4, true"})
    void everyDecoderRankGetsTheReplicaOfTheProducerRankItMapsTo(TransferMode mode, int producerTp, int consumerTp, boolean withAttention)
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            TestCache.Shape shape = withAttention ? TestCache.Shape.of(LAYERS, 16, false).withLatent(0, 2) : TestCache.Shape.of(LAYERS, 16, true);
            List<ProducerRank> producers = new ArrayList<>();
            for (int p = 0; p < producerTp; p++) {
                TestCache cache = harness.cache(shape, new Rank(0, 1, p, producerTp));
                // each replica gets its own bytes, so a decoder rank shows which producer rank wrote it
                cache.fill(seedOf(p), PRODUCER_BLOCKS);
                producers.add(harness.producer("mla-p", cache, true, b -> b));
            }
            List<TestCache> consumerCaches = new ArrayList<>();
            List<ConsumerRank> consumers = new ArrayList<>();
            for (int d = 0; d < consumerTp; d++) {
                TestCache cache = harness.cache(shape, new Rank(0, 1, d, consumerTp));
                consumerCaches.add(cache);
                consumers.add(harness.consumer("mla-d", cache, true, b -> b));
            }
            TransferParams params = null;
            for (ProducerRank producer : producers) {
                params = producer.prefillFinished("prefill-7", consumerCaches.getFirst().idsPerGroup(PRODUCER_BLOCKS));
            }
            for (ConsumerRank consumer : consumers) {
                consumer.blocksAllocated("decode-7", params, mode, consumerCaches.getFirst().idsPerGroup(CONSUMER_BLOCKS));
            }

            int perWriter = consumerTp / producerTp;
            for (int d = 0; d < consumerTp; d++) {
                ConsumerRank consumer = consumers.get(d);
                List<String> received = new ArrayList<>();
                List<ReceiveFailure> failed = new ArrayList<>();
                await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "decoder rank received");
                assertEquals(List.of(), failed, "decoder rank " + d);
                assertEquals(List.of("decode-7"), received, "decoder rank " + d + " reports the request once");
                consumerCaches.get(d).check(seedOf(d / perWriter), CONSUMER_BLOCKS, PRODUCER_BLOCKS.length);
            }
            for (int p = 0; p < producerTp; p++) {
                ProducerRank producer = producers.get(p);
                List<FreedRequest> freed = new ArrayList<>();
                await(() -> EngineHarness.drain(producer, freed).size() == 1, "producer rank frees");
                assertEquals(List.of(new FreedRequest("prefill-7", FreeReason.COMPLETED)), freed, "producer rank " + p);
                // one completion from each decoder rank it serves, each saying how many there are
                assertEquals(Collections.nCopies(perWriter, "prefill-7:" + perWriter + ":" + TransferParams.formatEpoch(producer.epoch)), completions(recording, producer), "producer rank " + p);
                if (mode == TransferMode.PUSH) {
                    assertEquals(Collections.nCopies(perWriter, TransferOp.WRITE), recording.postsBy(producer.runtime().transport().agentName()),
                            "producer rank " + p + " writes each decoder rank it serves once");
                }
            }
            for (ConsumerRank consumer : consumers) {
                assertEquals(mode == TransferMode.PULL ? List.of(TransferOp.READ) : List.of(), recording.postsBy(consumer.runtime().transport().agentName()));
            }
            List<ConnectorRank> all = new ArrayList<>(producers);
            all.addAll(consumers);
            await(() -> all.stream().allMatch(rank -> rank.runtime().audit().idle()), "idle audits");
            for (ProducerRank producer : producers) {
                assertEquals(List.of(), producer.poll(), "reported once");
            }
            assertEquals(0, harness.registry.get("kvbridge.transfer.failed").counter().count());
        }
    }

    @Test
    void headsThatTheDecoderSizeCannotShardAreRefusedBeforeAnyRegistration()
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            // 4 KV heads next to the latent: 6 decoder ranks cannot hold them evenly (pure MLA 2 -> 6 moves, see above)
            TestCache.Shape shape = TestCache.Shape.of(LAYERS, 16, false).withLatent(0, 2);
            List<ProducerRank> producers = new ArrayList<>();
            for (int p = 0; p < 2; p++) {
                TestCache cache = harness.cache(shape, new Rank(0, 1, p, 2));
                producers.add(harness.producer("mixed-p", cache, true, b -> b));
            }
            TestCache consumerCache = harness.cache(shape, new Rank(0, 1, 5, 6));
            ConsumerRank consumer = harness.consumer("mixed-d", consumerCache, true, b -> b);
            TransferParams params = null;
            for (ProducerRank producer : producers) {
                params = producer.prefillFinished("prefill-8", consumerCache.idsPerGroup(PRODUCER_BLOCKS));
            }
            consumer.blocksAllocated("decode-8", params, TransferMode.PUSH, consumerCache.idsPerGroup(CONSUMER_BLOCKS));
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, new ArrayList<>(), failed) != null && failed.size() == 1, "refused");
            ReceiveFailure failure = failed.getFirst();
            assertEquals(ErrorCode.TP_UNSUPPORTED, failure.code(), failure.toString());
            assertTrue(failure.message().contains("tpSize=6 cannot shard kvHeads=4 evenly"), failure.message());
            assertTrue(failure.message().contains("kvHeads a multiple of tpSize, or tpSize a multiple of kvHeads"), failure.message());
            for (ProducerRank producer : producers) {
                assertEquals(List.of(), recording.receivedBy(producer.runtime().transport().agentName()), "no registration reached the producer");
                assertEquals(1, producer.audit().requests(), "the prefill is still held: only the lease or an abort frees it");
                producer.abort("prefill-8");
                List<FreedRequest> freed = new ArrayList<>();
                await(() -> EngineHarness.drain(producer, freed).size() == 1, "aborted");
                assertEquals(List.of(new FreedRequest("prefill-8", FreeReason.ABORTED)), freed);
            }
            List<ConnectorRank> all = new ArrayList<>(producers);
            all.add(consumer);
            await(() -> all.stream().allMatch(rank -> rank.runtime().audit().idle()), "idle audits");
        }
    }

    private static int seedOf(int producerRank)
    {
        return 20 + producerRank;
    }

    /** Completions a producer rank received, without push registrations and heartbeats. */
    private static List<String> completions(RecordingBackendFactory recording, ProducerRank producer)
    {
        return recording.receivedBy(producer.runtime().transport().agentName()).stream()
                .filter(message -> !message.startsWith("PUSH_REG:") && !message.startsWith("HB:"))
                .toList();
    }
}
