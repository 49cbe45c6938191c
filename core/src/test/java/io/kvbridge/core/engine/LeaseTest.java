package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.stepUntil;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.ManualClock;
import io.kvbridge.spi.geometry.Rank;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Leases on a clock that moves only when told to: no test here waits for real time to pass. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class LeaseTest
{
    private final ManualClock clock = new ManualClock();

    private static void steps(ProducerRank producer, int count)
    {
        for (int i = 0; i < count; i++) {
            producer.runtime().step();
        }
    }

    @Test
    void heartbeatExtendsExpiredLeasesAndIgnoresUnknownIds()
    {
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false, b -> b);
            producer.prefillFinished("req-a", ids(1));
            producer.prefillFinished("req-b", ids(2));
            stepUntil(() -> producer.audit().leasesHeld() == 2, "held", producer);
            // both leases expired 5 s ago; the heartbeat is handled before the expiry scan of the same round
            clock.advance(Duration.ofSeconds(35));
            harness.rawPeerTo(producer).send(Messages.heartbeat(producer.epoch, List.of("req-a", "req-unknown", "req-b")));
            stepUntil(() -> true, "one round", producer);
            steps(producer, 10);
            assertEquals(List.of(), producer.poll(), "nothing reported");
            assertEquals(2, producer.audit().leasesHeld(), "both extended, req-unknown not created");
            assertEquals(2, producer.audit().requests());
            // extended to now + 2/3 of the 30 s lease
            clock.advance(Duration.ofSeconds(19));
            steps(producer, 10);
            assertEquals(List.of(), producer.poll());
            clock.advance(Duration.ofSeconds(2));
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 2, "expired", producer);
            assertEquals(Set.of(new FreedRequest("req-a", FreeReason.EXPIRED), new FreedRequest("req-b", FreeReason.EXPIRED)), Set.copyOf(freed));
            assertEquals(2.0, harness.registry.get("kvbridge.lease.expired").counter().count());
            // a completion after expiry is late: logged, never reported again
            harness.rawPeerTo(producer).send(Messages.completion("req-a", 1, producer.epoch));
            steps(producer, 10);
            assertEquals(List.of(), producer.poll());
            assertEquals(0, producer.audit().leasesHeld());
        }
    }

    @Test
    void aCompletionThatOvertakesTheQueuedPrefillStillCompletesIt()
    {
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false, b -> b);
            producer.prefillFinished("fast", ids(1));
            // the worker drains a consumer's completion before it ran the queued prefillFinished
            producer.onNotification("consumer-agent", Messages.completion("fast", 1, producer.epoch));
            assertEquals(List.of(new FreedRequest("fast", FreeReason.COMPLETED)), producer.poll());
            steps(producer, 5);
            assertEquals(0, producer.audit().leasesHeld());
            assertEquals(List.of(), producer.poll());
        }
    }

    @Test
    void aRegistrationThatArrivesAfterTheLeaseExpiredIsDroppedNotStashed()
    {
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false, b -> b);
            producer.prefillFinished("slow", ids(1));
            stepUntil(() -> producer.audit().leasesHeld() == 1, "held", producer);
            clock.advance(Duration.ofSeconds(31));
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "expired", producer);
            harness.rawPeerTo(producer).send(Messages.registration(new Messages.Registration("d-slow", "slow", "d", "127.0.0.1", 1, 0, 0, 1, true,
                    ids(2), producer.epoch, 0x5eedL, new byte[] {1})));
            steps(producer, 10);
            assertEquals(0, producer.audit().stashedRegistrations());
            assertEquals(List.of(), producer.poll());
        }
    }

    @Test
    void aCallerClockFarBehindStillGivesTheFullLease()
    {
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false, b -> b);
            long callerNow = clock.monotonicNanos() - TimeUnit.SECONDS.toNanos(10_000);
            producer.prefillFinished("late-clock", ids(3), callerNow, callerNow + TimeUnit.SECONDS.toNanos(30));
            stepUntil(() -> producer.audit().leasesHeld() == 1, "held", producer);
            clock.advance(Duration.ofMillis(29_900));
            steps(producer, 10);
            assertEquals(List.of(), producer.poll(), "the lease is rebased, not taken from the caller's clock");
            clock.advance(Duration.ofMillis(200));
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "expired", producer);
            assertEquals(new FreedRequest("late-clock", FreeReason.EXPIRED), freed.getFirst());
        }
    }

    @Test
    void completionsExpiriesAndAbortsReportEachRequestOnce()
    {
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(TestCache.Shape.of(1, 64, false), Rank.single()), false, b -> b);
            EngineHarness.RawPeer first = harness.rawPeerTo(producer);
            EngineHarness.RawPeer second = harness.rawPeerTo(producer);
            for (int i = 0; i < 6; i++) {
                producer.prefillFinished("r" + i, ids(i));
            }
            stepUntil(() -> producer.audit().leasesHeld() == 6, "held", producer);
            // r0: two consumers expected; the same consumer twice does not count twice
            first.send(Messages.completion("r0", 2, producer.epoch));
            first.send(Messages.completion("r0", 2, producer.epoch));
            steps(producer, 5);
            assertEquals(List.of(), producer.poll());
            second.send(Messages.completion("r0", 2, producer.epoch));
            // r1: completed, then a duplicate completion and an abort arrive late
            first.send(Messages.completion("r1", 1, producer.epoch));
            steps(producer, 5);
            first.send(Messages.completion("r1", 1, producer.epoch));
            producer.abort("r1");
            producer.abort("r2");
            producer.abort("never-held");
            steps(producer, 5);
            clock.advance(Duration.ofSeconds(31));
            second.send(Messages.completion("r3", 1, producer.epoch));
            steps(producer, 10);
            first.send(Messages.completion("r4", 1, producer.epoch));
            steps(producer, 10);
            List<FreedRequest> freed = producer.poll();
            assertEquals(6, freed.size(), freed.toString());
            assertEquals(6, freed.stream().map(FreedRequest::requestId).collect(Collectors.toSet()).size(), "each request once");
            assertEquals(Set.of(new FreedRequest("r0", FreeReason.COMPLETED), new FreedRequest("r1", FreeReason.COMPLETED),
                    new FreedRequest("r2", FreeReason.ABORTED)), freed.stream().filter(f -> Set.of("r0", "r1", "r2").contains(f.requestId()))
                    .collect(Collectors.toSet()));
            // r3 arrived in the same round as its expiry: the notification is handled first
            assertEquals(FreeReason.COMPLETED, freed.stream().filter(f -> f.requestId().equals("r3")).findFirst().orElseThrow().reason());
            assertEquals(FreeReason.EXPIRED, freed.stream().filter(f -> f.requestId().equals("r4")).findFirst().orElseThrow().reason());
            assertEquals(FreeReason.EXPIRED, freed.stream().filter(f -> f.requestId().equals("r5")).findFirst().orElseThrow().reason());
            steps(producer, 5);
            assertEquals(List.of(), producer.poll());
            assertEquals(0, producer.audit().leasesHeld());
        }
    }

    /**
     * The timers a waking worker parks until: a producer's next lease check or stash sweep, and a
     * push consumer's registration deadline while it does not know the producer's request yet, so
     * has no heartbeat to send (counting that heartbeat made every scan due at once).
     */
    @Test
    void theNextTimerIsTheEarliestThatCanFire()
    {
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false,
                    b -> b.registrationTimeout(Duration.ofSeconds(60)));
            TransferParams params = producer.prefillFinished("p-1", ids(1));
            stepUntil(() -> producer.audit().leasesHeld() == 1, "held", producer);
            long producerLeft = producer.nextTimerNanos() - clock.monotonicNanos();
            assertTrue(producerLeft > 0 && producerLeft <= TimeUnit.SECONDS.toNanos(1), () -> "producer's next timer in " + producerLeft + " ns");

            // pushed before the producer names its request: no heartbeat applies until its write says which
            consumer.blocksAllocated("d-1", params.withRequestId(""), TransferMode.PUSH, ids(5));
            stepUntil(() -> consumer.registered("d-1"), "registered", consumer);
            clock.advance(Duration.ofSeconds(10));
            consumer.runtime().step();
            long consumerLeft = consumer.nextTimerNanos() - clock.monotonicNanos();
            assertTrue(consumerLeft > TimeUnit.SECONDS.toNanos(40) && consumerLeft <= TimeUnit.SECONDS.toNanos(50),
                    () -> "consumer's next timer in " + consumerLeft + " ns, expected the registration deadline about 50 s ahead");
        }
    }
}
