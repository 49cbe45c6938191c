package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.EngineHarness.stepUntil;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.Health;
import io.kvbridge.api.Health.Check;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.ManualClock;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelServer;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.testkit.FaultInjectingBackendFactory;
import io.kvbridge.testkit.FaultPlan;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Every probe of the health check against real connectors, real loopback side channels and transports broken the way they break. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class EngineHealthTest
{
    private static final TestCache.Shape SHAPE = TestCache.Shape.of(2, 16, false);
    private static final Duration TIMEOUT = Duration.ofMillis(500);

    private static Check check(List<Check> checks, String name)
    {
        return checks.stream().filter(check -> check.name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no check named '" + name + "' in " + checks));
    }

    private static void assertFailedWith(Check check, String... fragments)
    {
        assertFalse(check.ok(), check::toString);
        for (String fragment : fragments) {
            assertTrue(check.detail().contains(fragment), () -> "'" + fragment + "' missing from " + check);
        }
    }

    private static TransferBackend bridgeTransport(EngineHarness harness)
    {
        TransferBackend transport = harness.factory.create(Map.of(), () -> "bridge-" + System.nanoTime());
        harness.own(transport);
        return transport;
    }

    @Test
    void connectorsThatWorkPassEveryProbeAndTheirSideChannelsAnswer()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TransferBackend transport = bridgeTransport(harness);
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), true, b -> b);
            consumer.blocksAllocated("d", producer.prefillFinished("r", ids(1)), TransferMode.PULL, ids(2));
            List<String> received = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, received, new ArrayList<>()) != null && received.size() == 1, "received");

            List<Check> checks = harness.services.health(transport, TIMEOUT);
            assertEquals(List.of("transport", consumer.name, producer.name, "side channel d", "side channel p"), checks.stream().map(Check::name).toList());
            assertTrue(Health.of(checks).healthy(), () -> Health.of(checks).problems().toString());
            assertTrue(check(checks, producer.name).detail().startsWith("worker answered in "), checks::toString);
            assertTrue(check(checks, "side channel p").detail().contains("answered the request for rank pp0:tp0 at 127.0.0.1:"
                    + producer.runtime().ownAddress().port()), checks::toString);
        }
    }

    @Test
    void aClosedSideChannelFailsItsCheckWithTheAddressAndTheCause()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TransferBackend transport = bridgeTransport(harness);
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            SideChannelServer server = harness.services.sideChannel("p");
            server.close();

            List<Check> checks = harness.services.health(transport, TIMEOUT);
            assertFailedWith(check(checks, "side channel p"), "127.0.0.1:" + producer.runtime().ownAddress().port(), ErrorCode.PEER_UNKNOWN.id(),
                    "peers cannot shake hands with engine p");
            assertTrue(check(checks, producer.name).ok(), "the connector itself still runs");
            assertTrue(check(checks, "transport").ok());
        }
    }

    @Test
    void aWorkerThreadThatDiedIsReported()
    {
        RecordingBackendFactory breakable = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(breakable, SideChannelClock.system())) {
            TransferBackend transport = bridgeTransport(harness);
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            assertTrue(check(harness.services.health(transport, TIMEOUT), producer.name).ok());

            breakable.drainFailure = new InternalError("injected: the native transport crashed");
            await(() -> !producer.runtime().workerThread().isAlive(), "the worker thread to die");

            assertFailedWith(check(harness.services.health(transport, TIMEOUT), producer.name),
                    "worker thread " + producer.runtime().workerThread().getName() + " has stopped (state=TERMINATED)", "close it and open a new one");
        }
    }

    @Test
    void aStalledWorkerIsReportedWithWhereItWaitsAndRecovers()
    {
        RecordingBackendFactory breakable = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(breakable, SideChannelClock.system())) {
            TransferBackend transport = bridgeTransport(harness);
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            CountDownLatch gate = new CountDownLatch(1);
            breakable.drainGate = gate;
            try {
                await(() -> producer.runtime().workerThread().getState() == Thread.State.WAITING, "the worker to block in its transport");
                Check stalled = check(harness.services.health(transport, TIMEOUT), producer.name);
                assertFailedWith(stalled, "did not answer a probe within 500 ms", "state=WAITING", "RecordingBackendFactory", "its loop is stalled");
                // the unanswered probe is reused: a stalled worker's queue does not grow with each check
                assertTrue(producer.runtime().probe() == producer.runtime().probe());
            }
            finally {
                breakable.drainGate = null;
                gate.countDown();
            }
            List<Check> recovered = harness.services.health(transport, TIMEOUT);
            assertTrue(check(recovered, producer.name).ok(), recovered::toString);
        }
    }

    @Test
    void aRetainedHandleIsReportedUntilItsReleaseSucceeds()
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            TransferBackend transport = bridgeTransport(harness);
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), true, b -> b);
            recording.failingReleases.set(Integer.MAX_VALUE);
            consumer.blocksAllocated("d", producer.prefillFinished("r", ids(1)), TransferMode.PULL, ids(2));
            await(() -> consumer.audit().retainedHandles() == 1, "a retained handle");

            assertFailedWith(check(harness.services.health(transport, TIMEOUT), consumer.name), "retainedHandles=1 (0x", "the oldest posted ",
                    "releasing these transfer handles failed");

            recording.failingReleases.set(0);
            await(() -> consumer.audit().retainedHandles() == 0, "the retried release");
            assertTrue(check(harness.services.health(transport, TIMEOUT), consumer.name).ok());
        }
    }

    @Test
    void aTransferPastItsDeadlineIsReportedWhileNoWorkerRoundFailsIt()
    {
        ManualClock clock = new ManualClock();
        FaultInjectingBackendFactory stalls = new FaultInjectingBackendFactory(new LocalBackendFactory(), FaultPlan.none(11).withStalls(1.0));
        try (EngineHarness harness = new EngineHarness(stalls, clock)) {
            TransferBackend transport = bridgeTransport(harness);
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            // stepped by hand: its rounds run only when the test says so
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), false, b -> b.transferTimeout(Duration.ofSeconds(10)));
            consumer.blocksAllocated("d", producer.prefillFinished("r", ids(1)), TransferMode.PULL, ids(2));
            stepUntil(() -> consumer.audit().inFlightTransfers() == 1, "read posted", consumer);

            clock.advance(Duration.ofSeconds(10));
            Check inTime = check(harness.services.health(transport, TIMEOUT), consumer.name);
            assertFailedWith(inTime, "was never started");
            assertFalse(inTime.detail().contains("past its deadline"), "within the grace of a worker round: " + inTime);

            clock.advance(Duration.ofSeconds(2));
            assertFailedWith(check(harness.services.health(transport, TIMEOUT), consumer.name),
                    "a transfer is 2000 ms past its deadline and was not failed (inFlightTransfers=1, transferTimeout=PT10S)");

            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(consumer, new ArrayList<>(), failed) != null && failed.size() == 1, "deadline enforced", consumer);
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, failed.getFirst().code());
            Check enforced = check(harness.services.health(transport, TIMEOUT), consumer.name);
            assertFalse(enforced.detail().contains("past its deadline"), enforced::toString);
        }
    }
}
