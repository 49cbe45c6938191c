package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Replicated (MLA) blocks moved into a decoder with more tensor-parallel ranks than the producer,
 * in both modes, over the real {@code local} transport: every decoder rank gets its copy, from the
 * producer rank {@code d / (consumerTp / producerTp)}, every producer rank frees once, and both
 * engines end idle.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class MlaFanOutTest
{
    private static final int LAYERS = 3;
    private static final int[] PRODUCER_BLOCKS = {2, 3, 4, 5};
    private static final int[] CONSUMER_BLOCKS = {9, 10, 11, 12};

    @ParameterizedTest(name = "{0}: producer tp{1} -> consumer tp{2}")
    @CsvSource({"PUSH, 1, 4", "PUSH, 2, 4", "PUSH, 1, 2", "PULL, 1, 4", "PULL, 2, 4", "PULL, 1, 2"})
    void everyDecoderRankGetsTheReplicaOfTheProducerRankItMapsTo(TransferMode mode, int producerTp, int consumerTp)
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            TestCache.Shape shape = TestCache.Shape.of(LAYERS, 16, true);
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
                params = producer.prefillFinished("prefill-7", ids(PRODUCER_BLOCKS));
            }
            for (ConsumerRank consumer : consumers) {
                consumer.blocksAllocated("decode-7", params, mode, ids(CONSUMER_BLOCKS));
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
                assertEquals(Collections.nCopies(perWriter, "prefill-7:" + perWriter), completions(recording, producer), "producer rank " + p);
                if (mode == TransferMode.PUSH) {
                    assertEquals(Collections.nCopies(perWriter, TransferOp.WRITE), recording.postsBy(producer.transport.agentName()),
                            "producer rank " + p + " writes each decoder rank it serves once");
                }
            }
            for (ConsumerRank consumer : consumers) {
                assertEquals(mode == TransferMode.PULL ? List.of(TransferOp.READ) : List.of(), recording.postsBy(consumer.transport.agentName()));
            }
            List<RankWorker> all = new ArrayList<>(producers);
            all.addAll(consumers);
            await(() -> all.stream().allMatch(rank -> rank.audit().idle()), "idle audits");
            for (ProducerRank producer : producers) {
                assertEquals(List.of(), producer.poll(), "reported once");
            }
            assertEquals(0, harness.registry.get("kvbridge.transfer.failed").counter().count());
        }
    }

    private static int seedOf(int producerRank)
    {
        return 20 + producerRank;
    }

    /** Completions a producer rank received, without push registrations and heartbeats. */
    private static List<String> completions(RecordingBackendFactory recording, ProducerRank producer)
    {
        return recording.receivedBy(producer.transport.agentName()).stream()
                .filter(message -> !message.startsWith("PUSH_REG:") && !message.startsWith("HB:"))
                .toList();
    }
}
