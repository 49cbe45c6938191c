package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.stepUntil;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.geometry.Rank;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/** Push: completion counting over pipeline stages, and how registrations meet finished prefills. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class PushMatchingTest
{
    @Test
    void producerPp2CompletesOnlyWithTheSecondStageAndIgnoresUnknownIds()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(4, 16, false).stages(2, 2);
            List<TestCache> stageCaches = List.of(harness.cache(shape, new Rank(0, 2, 0, 1)), harness.cache(shape, new Rank(1, 2, 0, 1)));
            List<ProducerRank> stages = new ArrayList<>();
            for (TestCache cache : stageCaches) {
                cache.fill(8, new int[] {4, 5});
                stages.add(harness.producer("pp2", cache, true, b -> b));
            }
            TestCache consumerCache = harness.cache(TestCache.Shape.of(4, 16, false), Rank.single());
            ConsumerRank consumer = harness.consumer("pp1", consumerCache, false, b -> b);
            TransferParams params = stages.get(0).prefillFinished("r-pp", ids(4, 5));
            assertEquals(2, params.ppSize());
            consumer.blocksAllocated("d-pp", params, TransferMode.PUSH, ids(1, 2));
            // only stage 0 finished: its write arrives, the request is not complete
            assertEquals(List.of(), stages.get(0).poll());
            List<String> written = new ArrayList<>();
            stepUntil(() -> harness.registry.find("kvbridge.transfer.time").timer() != null
                    && harness.registry.get("kvbridge.transfer.time").timer().count() == 1, "stage 0 write", consumer);
            for (int i = 0; i < 50; i++) {
                consumer.runtime().step();
            }
            assertTrue(consumer.poll().isEmpty(), "one of two stages does not complete the request");
            assertEquals(1, consumer.audit().requests());
            // a completion for a request nobody waits for changes nothing
            EngineHarness.RawPeer stranger = harness.rawPeerTo(consumer);
            stranger.send(Messages.pushDone("nobody", "r-pp", consumer.epoch));
            stranger.send(Messages.pushDone("d-pp", "r-pp", consumer.epoch));
            for (int i = 0; i < 50; i++) {
                consumer.runtime().step();
            }
            assertTrue(consumer.poll().isEmpty(), "unknown ids and unknown writers change nothing");
            assertEquals(1, consumer.audit().requests());
            stages.get(1).prefillFinished("r-pp", ids(4, 5));
            List<String> received = new ArrayList<>();
            stepUntil(() -> {
                ReceiveBatch batch = consumer.poll();
                assertEquals(List.of(), batch.failed());
                received.addAll(batch.received());
                return !received.isEmpty();
            }, "second stage completes", consumer);
            assertEquals(List.of("d-pp"), received);
            written.add("d-pp");
            consumerCache.check(8, new int[] {1, 2}, 2);
            for (ProducerRank stage : stages) {
                List<FreedRequest> freed = new ArrayList<>();
                stepUntil(() -> EngineHarness.drain(stage, freed).size() == 1, "acknowledged", consumer);
                assertEquals(new FreedRequest("r-pp", FreeReason.COMPLETED), freed.getFirst());
            }
            assertEquals(1, written.size());
        }
    }

    private static TransferParams routerFirst(ProducerRank producer)
    {
        // a router that hands the consumer the producer's address before the prefill finished
        return new TransferParams(producer.settings.engineId(), "", List.of(producer.runtime().ownAddress()), 1, 1, ids(), EnumSet.allOf(TransferMode.class),
                30_000);
    }

    /** A producer stepped by hand and a running consumer, both with two layers. */
    private record PushPair(TestCache producerCache, TestCache consumerCache, ProducerRank producer, ConsumerRank consumer)
    {
        static PushPair create(EngineHarness harness)
        {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            TestCache producerCache = harness.cache(shape, Rank.single());
            TestCache consumerCache = harness.cache(shape, Rank.single());
            return new PushPair(producerCache, consumerCache, harness.producer("p", producerCache, false, b -> b),
                    harness.consumer("d", consumerCache, true, b -> b));
        }
    }

    /** Steps the producer until the consumer received the pushed request and the producer freed it on the acknowledgement. */
    private static void awaitPushedAndAcknowledged(EngineHarness harness, ProducerRank producer, ConsumerRank consumer, FreedRequest expected)
    {
        List<String> received = new ArrayList<>();
        stepUntil(() -> EngineHarness.collect(consumer, received, new ArrayList<>()) != null && received.size() == 1, "pushed", producer);
        List<FreedRequest> freed = new ArrayList<>();
        stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "acknowledged", producer);
        assertEquals(expected, freed.getFirst());
        assertEquals(1, harness.registry.get("kvbridge.transfer.time").timer().count(), "one write");
        assertEquals(0, producer.audit().stashedRegistrations());
        assertEquals(0, producer.audit().leasesHeld());
    }

    @Test
    void registrationFirstMatchesByBaseIdAndStartsThePushOnce()
    {
        try (EngineHarness harness = new EngineHarness()) {
            PushPair pair = PushPair.create(harness);
            TestCache producerCache = pair.producerCache();
            TestCache consumerCache = pair.consumerCache();
            ProducerRank producer = pair.producer();
            ConsumerRank consumer = pair.consumer();
            consumer.blocksAllocated("X-deadbeef", routerFirst(producer), TransferMode.PUSH, ids(6, 7));
            stepUntil(() -> producer.audit().stashedRegistrations() == 1, "registration stashed", producer);
            producerCache.fill(2, new int[] {0, 1});
            producer.prefillFinished("X-1a2b3c4d", ids(0, 1));
            awaitPushedAndAcknowledged(harness, producer, consumer, new FreedRequest("X-1a2b3c4d", FreeReason.COMPLETED));
            consumerCache.check(2, new int[] {6, 7}, 2);
        }
    }

    @Test
    void blocksFirstStartThePushOnceWhenTheRegistrationArrives()
    {
        try (EngineHarness harness = new EngineHarness()) {
            PushPair pair = PushPair.create(harness);
            TestCache producerCache = pair.producerCache();
            TestCache consumerCache = pair.consumerCache();
            ProducerRank producer = pair.producer();
            ConsumerRank consumer = pair.consumer();
            producerCache.fill(4, new int[] {9});
            TransferParams params = producer.prefillFinished("Y-00000000", ids(9));
            stepUntil(() -> producer.audit().leasesHeld() == 1, "held", producer);
            assertEquals(0, producer.audit().stashedRegistrations());
            consumer.blocksAllocated("Y-ABCDEF01", params.withRequestId(""), TransferMode.PUSH, ids(3));
            awaitPushedAndAcknowledged(harness, producer, consumer, new FreedRequest("Y-00000000", FreeReason.COMPLETED));
            consumerCache.check(4, new int[] {3}, 1);
        }
    }

    @Test
    void aConsumerMayReuseARequestIdOnceTheRequestEnded()
    {
        try (EngineHarness harness = new EngineHarness()) {
            PushPair pair = PushPair.create(harness);
            for (int round = 0; round < 2; round++) {
                pair.producerCache().fill(round, new int[] {round});
                TransferParams params = pair.producer().prefillFinished("prefill-" + round, ids(round));
                pair.consumer().blocksAllocated("same-id", params, TransferMode.PUSH, ids(5));
                List<String> received = new ArrayList<>();
                stepUntil(() -> EngineHarness.collect(pair.consumer(), received, new ArrayList<>()) != null && received.size() == 1, "pushed",
                        pair.producer());
                pair.consumerCache().check(round, new int[] {5}, 1);
                List<FreedRequest> freed = new ArrayList<>();
                stepUntil(() -> EngineHarness.drain(pair.producer(), freed).size() == 1, "acknowledged", pair.producer());
                assertEquals(new FreedRequest("prefill-" + round, FreeReason.COMPLETED), freed.getFirst());
            }
        }
    }

    @Test
    void aDuplicateRegistrationStagesOneEntryAndAMalformedOneIsDroppedWithALogLine()
    {
        Logger logger = (Logger) LoggerFactory.getLogger(ProducerRank.class);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(1, 16, false);
            ProducerRank producer = harness.producer("p", harness.cache(shape, Rank.single()), false, b -> b);
            EngineHarness.RawPeer consumer = harness.rawPeerTo(producer);
            byte[] registration = Messages.registration(new Messages.Registration("Z-12345678", "", "d", "127.0.0.1", 1, 0, 0, 1, true, ids(1), producer.epoch, 0x5eedL, new byte[] {1}));
            consumer.send(registration);
            consumer.send(registration.clone());
            stepUntil(() -> producer.audit().stashedRegistrations() == 1, "stashed", producer);
            for (int i = 0; i < 20; i++) {
                producer.runtime().step();
            }
            assertEquals(1, producer.audit().stashedRegistrations(), "the same registration twice stages one entry");
            byte[] malformed = "PUSH_REG:\u00c1\u0001not msgpack".getBytes(StandardCharsets.ISO_8859_1);
            consumer.send(malformed);
            consumer.send("PUSH_REG:".getBytes(StandardCharsets.US_ASCII));
            stepUntil(() -> appender.list.stream().filter(event -> event.getFormattedMessage().contains("dropped a malformed notification")).count() == 2,
                    "two log lines", producer);
            assertEquals(1, producer.audit().stashedRegistrations(), "nothing else changed");
            assertEquals(0, producer.audit().leasesHeld());
            assertEquals(List.of(), producer.poll());
        }
        finally {
            logger.detachAppender(appender);
        }
    }

    @Test
    void baseIdsDropOnlyAnEightHexDigitSuffix()
    {
        assertEquals("X", io.kvbridge.api.RequestIds.baseId("X-1a2b3c4d"));
        assertEquals("X", io.kvbridge.api.RequestIds.baseId("X-DEADBEEF"));
        assertEquals("X-1a2b3c4", io.kvbridge.api.RequestIds.baseId("X-1a2b3c4"));
        assertEquals("X-1a2b3c4g", io.kvbridge.api.RequestIds.baseId("X-1a2b3c4g"));
        assertEquals("a-b", io.kvbridge.api.RequestIds.baseId("a-b-00000000"));
        assertTrue(new SideChannelAddress("::1", 5).toString().startsWith("["));
    }
}
