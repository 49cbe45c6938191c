package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.EngineHarness.stepUntil;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.Rank;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An engine restarted under the same id and side channel port draws a new epoch; requests that
 * name the earlier one fail with {@code STALE_EPOCH} and move nothing, and the restarted engine
 * is served again at once.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class EngineEpochTest
{
    private static final TestCache.Shape SHAPE = TestCache.Shape.of(2, 32, false);

    private static long bytesMoved(EngineHarness harness)
    {
        DistributionSummary bytes = harness.registry.find("kvbridge.transfer.bytes").summary();
        return bytes == null ? 0 : (long) bytes.totalAmount();
    }

    private static double staleRejections(EngineHarness harness)
    {
        Counter counter = harness.registry.find("kvbridge.notifications.rejected").tag("reason", PeerSessions.Rejection.STALE_EPOCH.tag).counter();
        return counter == null ? 0 : counter.count();
    }

    private static ReceiveFailure failureOf(ConsumerRank consumer, String requestId)
    {
        List<String> received = new ArrayList<>();
        List<ReceiveFailure> failed = new ArrayList<>();
        await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, requestId + " ends");
        assertEquals(List.of(), received, "a request naming a restarted producer's earlier epoch was reported received");
        return failed.getFirst();
    }

    private static void receives(ConsumerRank consumer, String requestId)
    {
        List<String> received = new ArrayList<>();
        List<ReceiveFailure> failed = new ArrayList<>();
        await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, requestId + " ends");
        assertEquals(List.of(), failed);
        assertEquals(List.of(requestId), received);
    }

    @Test
    void aPullNamingARestartedProducersEarlierEpochFailsBeforeAnyTransferAndTheNewOneServes()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache firstCache = harness.cache(SHAPE, Rank.single());
            ProducerRank first = harness.producer("prefill", firstCache, true, b -> b);
            int port = first.runtime().ownAddress().port();
            TestCache consumerCache = harness.cache(SHAPE, Rank.single());
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b);
            firstCache.fill(1, new int[] {1, 2});
            TransferParams stale = first.prefillFinished("r1", ids(1, 2));
            assertEquals(first.epoch, stale.epoch(0));

            // the producer restarts between prefillFinished and blocksAllocated: same engine id, same port
            first.close();
            TestCache secondCache = harness.cache(SHAPE, Rank.single());
            ProducerRank second = harness.producer("prefill", secondCache, true, b -> b.sideChannel("127.0.0.1", port));
            assertEquals(port, second.runtime().ownAddress().port());
            assertNotEquals(first.epoch, second.epoch);
            secondCache.fill(9, new int[] {1, 2});

            consumer.blocksAllocated("d-r1", stale, TransferMode.PULL, ids(5, 6));
            ReceiveFailure failure = failureOf(consumer, "d-r1");
            assertEquals(ErrorCode.STALE_EPOCH, failure.code());
            for (String named : List.of("producer prefill at 127.0.0.1:" + port + " restarted", TransferParams.formatEpoch(first.epoch),
                    TransferParams.formatEpoch(second.epoch), "nothing was transferred")) {
                assertTrue(failure.message().contains(named), named + " in " + failure.message());
            }
            assertTrue(consumerCache.untouched(), "the restarted producer's blocks were read");
            assertEquals(0, bytesMoved(harness));
            assertEquals(0, consumer.audit().requests());
            assertEquals(0, second.audit().leasesHeld(), "the restarted producer never held r1");

            // the restarted producer's own parameters are served at once
            TransferParams fresh = second.prefillFinished("r2", ids(1, 2));
            assertEquals(second.epoch, fresh.epoch(0));
            consumer.blocksAllocated("d-r2", fresh, TransferMode.PULL, ids(5, 6));
            receives(consumer, "d-r2");
            consumerCache.check(9, new int[] {5, 6}, 2);
            List<FreedRequest> freed = new ArrayList<>();
            await(() -> EngineHarness.drain(second, freed).size() == 1, "the restarted producer frees r2");
            assertEquals(List.of(new FreedRequest("r2", FreeReason.COMPLETED)), freed);
        }
    }

    @Test
    void aConsumerThatMetTheProducerBeforeItsRestartReadsNothingOfTheNewOne()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache firstCache = harness.cache(SHAPE, Rank.single());
            ProducerRank first = harness.producer("prefill", firstCache, true, b -> b);
            int port = first.runtime().ownAddress().port();
            TestCache consumerCache = harness.cache(SHAPE, Rank.single());
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b);
            firstCache.fill(1, new int[] {1, 2});
            consumer.blocksAllocated("d-r0", first.prefillFinished("r0", ids(1, 2)), TransferMode.PULL, ids(5, 6));
            receives(consumer, "d-r0");
            consumerCache.clear();
            long before = bytesMoved(harness);
            TransferParams stale = first.prefillFinished("r1", ids(1, 2));
            TransferParams alsoStale = first.prefillFinished("r3", ids(1, 2));

            first.close();
            TestCache secondCache = harness.cache(SHAPE, Rank.single());
            ProducerRank second = harness.producer("prefill", secondCache, true, b -> b.sideChannel("127.0.0.1", port));
            secondCache.fill(9, new int[] {1, 2});

            // the cached metadata names the epoch the parameters name, so the side channel is not asked: the gone peer refuses the READ
            consumer.blocksAllocated("d-r1", stale, TransferMode.PULL, ids(5, 6));
            ReceiveFailure failure = failureOf(consumer, "d-r1");
            assertEquals(ErrorCode.PEER_UNKNOWN, failure.code(), failure.message());
            // that failure had the side channel asked again: the next request naming the earlier epoch learns of the restart
            consumer.blocksAllocated("d-r3", alsoStale, TransferMode.PULL, ids(5, 6));
            failure = failureOf(consumer, "d-r3");
            assertEquals(ErrorCode.STALE_EPOCH, failure.code(), failure.message());
            assertTrue(consumerCache.untouched(), "the restarted producer's blocks were read");
            assertEquals(before, bytesMoved(harness));

            TransferParams fresh = second.prefillFinished("r2", ids(1, 2));
            consumer.blocksAllocated("d-r2", fresh, TransferMode.PULL, ids(5, 6));
            receives(consumer, "d-r2");
            consumerCache.check(9, new int[] {5, 6}, 2);
        }
    }

    @Test
    void aPushRegisteredByARestartedConsumersEarlierIncarnationIsNeverWritten()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache producerCache = harness.cache(SHAPE, Rank.single());
            // stepped by hand: it takes the registration only once the consumer has restarted
            ProducerRank producer = harness.producer("prefill", producerCache, false, b -> b);
            TestCache firstCache = harness.cache(SHAPE, Rank.single());
            ConsumerRank first = harness.consumer("decode", firstCache, false, b -> b);
            int port = first.runtime().ownAddress().port();
            producerCache.fill(3, new int[] {1, 2});
            TransferParams params = producer.prefillFinished("r1", ids(1, 2));
            first.blocksAllocated("d-r1", params, TransferMode.PUSH, ids(7, 8));
            stepUntil(() -> first.registered("d-r1"), "registered", first);

            first.close();
            TestCache secondCache = harness.cache(SHAPE, Rank.single());
            ConsumerRank second = harness.consumer("decode", secondCache, true, b -> b.sideChannel("127.0.0.1", port));
            assertEquals(port, second.runtime().ownAddress().port());
            assertNotEquals(first.epoch, second.epoch);

            // the producer takes the registration, shakes hands with the consumer's side channel and finds another epoch
            stepUntil(() -> harness.registry.get("kvbridge.transfer.failed").counter().count() >= 1, "the push to the earlier incarnation is given up",
                    producer);
            assertTrue(secondCache.untouched(), "the producer wrote into the restarted consumer's memory");
            assertTrue(firstCache.untouched(), "the producer wrote into the closed consumer's memory");
            assertEquals(0, bytesMoved(harness));
            assertEquals(1, producer.audit().leasesHeld(), "r1 stays held until its lease ends: nobody completes it");

            // a fresh request of the restarted consumer is written at once
            producerCache.fill(4, new int[] {3, 4});
            TransferParams fresh = producer.prefillFinished("r2", ids(3, 4));
            second.blocksAllocated("d-r2", fresh, TransferMode.PUSH, ids(7, 8));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(second, received, failed) != null && received.size() + failed.size() == 1, "d-r2 ends", producer);
            assertEquals(List.of(), failed);
            assertEquals(List.of("d-r2"), received);
            secondCache.check(4, new int[] {7, 8}, 2);
        }
    }

    @Test
    void aProducerRefusesWhatNamesAnEarlierEpochOfItsEngineAndCountsIt()
    {
        try (EngineHarness harness = new EngineHarness()) {
            ProducerRank producer = harness.producer("prefill", harness.cache(SHAPE, Rank.single()), false, b -> b);
            producer.prefillFinished("r1", ids(1));
            stepUntil(() -> producer.audit().leasesHeld() == 1, "held", producer);
            EngineHarness.RawPeer consumer = harness.rawPeerTo(producer);
            long earlier = producer.epoch ^ 1;
            consumer.send(Messages.completion("r1", 1, earlier));
            consumer.send(Messages.heartbeat(earlier, List.of("r1")));
            consumer.send(Messages.registration(new Messages.Registration("d-r1", "r1", "decode", "127.0.0.1", 1, 0, 0, 1, false, ids(2), earlier,
                    0x5eedL, new byte[0])));
            await(() -> {
                producer.runtime().step();
                return staleRejections(harness) == 3;
            }, "three stale notifications counted");
            assertEquals(List.of(), producer.poll(), "a completion or registration for an earlier epoch freed the blocks");
            assertEquals(1, producer.audit().leasesHeld());
            consumer.send(Messages.completion("r1", 1, producer.epoch));
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "completed", producer);
            assertEquals(List.of(new FreedRequest("r1", FreeReason.COMPLETED)), freed);
        }
    }
}
