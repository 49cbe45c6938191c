package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.EngineHarness.stepUntil;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.FailurePolicy;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.ManualClock;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.testkit.FaultInjectingBackendFactory;
import io.kvbridge.testkit.FaultPlan;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Every failure ends the request once, with a structured reason and its invalid blocks. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class FailureTest
{
    private static final TestCache.Shape SHAPE = TestCache.Shape.of(2, 16, false);

    private static ReceiveFailure awaitFailure(ConsumerRank consumer)
    {
        List<String> received = new ArrayList<>();
        List<ReceiveFailure> failed = new ArrayList<>();
        await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "request ended");
        assertEquals(List.of(), received);
        return failed.getFirst();
    }

    private static int closedPort()
            throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    @Test
    void handshakeFailureFailsTheRequestWithEveryBlockInvalid()
            throws IOException
    {
        try (EngineHarness harness = new EngineHarness()) {
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), true, b -> b.failurePolicy(FailurePolicy.RECOMPUTE));
            TransferParams params = new TransferParams("gone", "r", List.of(new SideChannelAddress("127.0.0.1", closedPort())), 1, 1, ids(1, 2, 3),
                    EnumSet.allOf(TransferMode.class), 30_000);
            consumer.blocksAllocated("d-1", params, TransferMode.PULL, ids(1, 2, 3));
            ReceiveFailure failure = awaitFailure(consumer);
            assertEquals("d-1", failure.requestId());
            assertEquals(ErrorCode.HANDSHAKE_FAILED, failure.code());
            assertTrue(failure.message().contains("gone"), failure.message());
            assertEquals(ids(1, 2, 3), failure.invalidBlocks());
            assertEquals(FailurePolicy.RECOMPUTE, failure.policy());
            assertEquals(0, failure.firstInvalidBlock());
            await(() -> consumer.audit().idle(), "idle");
        }
    }

    @Test
    void postFailureFailsTheRequestAndPostsNoSiblingRead()
    {
        FaultInjectingBackendFactory faults = new FaultInjectingBackendFactory(new LocalBackendFactory(), FaultPlan.none(7).withFailedPosts(1.0));
        RecordingBackendFactory recording = new RecordingBackendFactory(faults);
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            List<ProducerRank> producers = new ArrayList<>();
            for (int rank = 0; rank < 2; rank++) {
                producers.add(harness.producer("p", harness.cache(shape, new Rank(0, 1, rank, 2)), true, b -> b));
            }
            ConsumerRank consumer = harness.consumer("d", harness.cache(shape, Rank.single()), true, b -> b);
            TransferParams params = producers.get(0).prefillFinished("r", ids(7, 8, 9));
            producers.get(1).prefillFinished("r", ids(7, 8, 9));
            consumer.blocksAllocated("d-7", params, TransferMode.PULL, ids(7, 8, 9));
            ReceiveFailure failure = awaitFailure(consumer);
            assertEquals(ErrorCode.TRANSFER_FAILED, failure.code());
            assertEquals(ids(7, 8, 9), failure.invalidBlocks());
            assertEquals(1, faults.created().stream().mapToInt(backend -> backend.counters().failedPosts).sum(), "the second READ was never tried");
            for (ProducerRank producer : producers) {
                assertEquals(List.of(), recording.receivedBy(producer.runtime().transport().agentName()), "no producer was told the request is done");
            }
            assertEquals(1.0, harness.registry.get("kvbridge.transfer.failed").counter().count());
        }
    }

    @Test
    void transferErrorsAndStallsFailWithTheirReason()
    {
        FaultPlan plan = FaultPlan.none(11).withStalls(1.0);
        try (EngineHarness harness = new EngineHarness(new FaultInjectingBackendFactory(new LocalBackendFactory(), plan), SideChannelClock.system())) {
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), true,
                    b -> b.transferTimeout(Duration.ofMillis(200)));
            consumer.blocksAllocated("stalled", producer.prefillFinished("r", ids(1)), TransferMode.PULL, ids(2));
            ReceiveFailure failure = awaitFailure(consumer);
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, failure.code());
            assertTrue(failure.message().contains("stalled"), failure.message());
            await(() -> consumer.audit().idle(), "the stalled handle was released");
        }
        plan = FaultPlan.none(12).withTransferErrors(1.0);
        try (EngineHarness harness = new EngineHarness(new FaultInjectingBackendFactory(new LocalBackendFactory(), plan), SideChannelClock.system())) {
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), true, b -> b);
            consumer.blocksAllocated("errored", producer.prefillFinished("r", ids(1)), TransferMode.PULL, ids(2));
            ReceiveFailure failure = awaitFailure(consumer);
            assertEquals(ErrorCode.TRANSFER_FAILED, failure.code());
            assertTrue(failure.message().contains("injected transfer error"), failure.message());
            assertEquals(ids(2), failure.invalidBlocks());
        }
    }

    @Test
    void aFailedPushWriteFailsTheConsumerAtOnceNotAfterItsRegistrationTimeout()
    {
        FaultPlan plan = FaultPlan.none(13).withTransferErrors(1.0);
        try (EngineHarness harness = new EngineHarness(new FaultInjectingBackendFactory(new LocalBackendFactory(), plan), SideChannelClock.system())) {
            // the lease outlives a slow first handshake on a loaded machine; the failure itself must come at once
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b.leaseDuration(Duration.ofSeconds(3)));
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), true,
                    b -> b.registrationTimeout(Duration.ofHours(1)));
            consumer.blocksAllocated("d-1", producer.prefillFinished("p-1", ids(1)), TransferMode.PUSH, ids(2));
            ReceiveFailure failure = awaitFailure(consumer);
            assertEquals(ErrorCode.TRANSFER_FAILED, failure.code(), failure.toString());
            assertTrue(failure.message().contains("producer p rank") && failure.message().contains("cannot write request p-1")
                    && failure.message().contains("injected transfer error"), failure.message());
            assertEquals(ids(2), failure.invalidBlocks());
            // nobody acknowledges a failed write: the producer's lease frees its blocks
            List<FreedRequest> freed = new ArrayList<>();
            await(() -> EngineHarness.drain(producer, freed).size() == 1, "expired");
            assertEquals(new FreedRequest("p-1", FreeReason.EXPIRED), freed.getFirst());
        }
    }

    @Test
    void pushWatchdogFailsARequestNobodyWritesAndTheLeaseFreesTheProducer()
    {
        ManualClock clock = new ManualClock();
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), false, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), false,
                    b -> b.registrationTimeout(Duration.ofSeconds(60)));
            TransferParams params = producer.prefillFinished("p-1", ids(1));
            // the producer never runs, so nobody writes
            consumer.blocksAllocated("d-1", params, TransferMode.PUSH, ids(5));
            stepUntil(() -> consumer.registered("d-1"), "registered", consumer);
            clock.advance(Duration.ofSeconds(61));
            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(consumer, new ArrayList<>(), failed) != null && failed.size() == 1, "watchdog", consumer);
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, failed.getFirst().code());
            assertTrue(failed.getFirst().message().contains("registrationTimeout"), failed.getFirst().message());
            // the producer wakes after its lease: the request expires; the stale registration is stashed and dropped later
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "expired", producer);
            assertEquals(new FreedRequest("p-1", FreeReason.EXPIRED), freed.getFirst());
        }
    }

    @Test
    void aHandleWhoseReleaseFailsIsRetainedAndRetriedBeforeTheRequestEnds()
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), false, b -> b);
            // the READ's release is the first release: it fails, so does the retry in the same round and the one after
            recording.failingReleases.set(3);
            consumer.blocksAllocated("d", producer.prefillFinished("r", ids(1)), TransferMode.PULL, ids(2));
            stepUntil(() -> consumer.audit().retainedHandles() == 1, "retained", consumer);
            assertTrue(consumer.poll().isEmpty(), "not received while its handle is retained");
            List<String> received = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(consumer, received, new ArrayList<>()) != null && received.size() == 1, "released and received",
                    consumer);
            assertEquals(0, recording.failingReleases.get());
            assertEquals(0, consumer.audit().retainedHandles());
            assertEquals(0, consumer.audit().transport().transfers());
        }
    }

    @Test
    void anIdleProducerEngineIsEvictedButNeverWhileATransferToItIsInFlight()
    {
        ManualClock clock = new ManualClock();
        FaultInjectingBackendFactory stalls = new FaultInjectingBackendFactory(new LocalBackendFactory(), FaultPlan.none(5).withStalls(1.0));
        try (EngineHarness harness = new EngineHarness(stalls, clock)) {
            // a READ's deadline is the shorter of transferTimeout and the producer's lease: both an hour here
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b.leaseDuration(Duration.ofHours(1)));
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), false, b -> b.transferTimeout(Duration.ofHours(1)));
            consumer.blocksAllocated("d", producer.prefillFinished("r", ids(1)), TransferMode.PULL, ids(2));
            stepUntil(() -> consumer.registered("d"), "posted", consumer);
            String key = new RemoteKey("p", producer.runtime().ownAddress()).cacheKey();
            // the engine TTL is 10 minutes: idle much longer, but a transfer to it is in flight
            clock.advance(Duration.ofMinutes(30));
            for (int i = 0; i < 5; i++) {
                consumer.runtime().step();
            }
            assertTrue(consumer.runtime().peers().remotes().cached(key).isPresent(), "not evicted while a transfer is in flight");
            assertEquals(1, consumer.audit().inFlightTransfers());
            // the stalled transfer passes its deadline, is released, and the engine becomes idle
            clock.advance(Duration.ofMinutes(31));
            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(consumer, new ArrayList<>(), failed) != null && failed.size() == 1, "stalled", consumer);
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, failed.getFirst().code());
            // a transfer stopped in flight drops its remote's peers and lists, so that the next request connects afresh
            stepUntil(() -> consumer.audit().transport().preparedLists() == 0 && consumer.audit().transport().peers() == 0, "peers and lists dropped",
                    consumer);
            assertTrue(consumer.runtime().peers().remotes().cached(key).isPresent(), "the handshake stays cached until the engine is idle past the TTL");
            clock.advance(Duration.ofMinutes(11));
            stepUntil(() -> consumer.runtime().peers().remotes().cached(key).isEmpty(), "evicted", consumer);
        }
    }

    @Test
    void abortCancelsAStalledWriteBeforeTheBlocksAreReported()
    {
        FaultInjectingBackendFactory stalls = new FaultInjectingBackendFactory(new LocalBackendFactory(), FaultPlan.none(9).withStalls(1.0));
        try (EngineHarness harness = new EngineHarness(stalls, SideChannelClock.system())) {
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), false, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), true, b -> b);
            consumer.blocksAllocated("d", producer.prefillFinished("r", ids(1)), TransferMode.PUSH, ids(2));
            stepUntil(() -> producer.audit().inFlightTransfers() == 1, "write posted", producer);
            producer.abort("r");
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "aborted", producer);
            assertEquals(new FreedRequest("r", FreeReason.ABORTED), freed.getFirst());
            assertEquals(0, producer.audit().inFlightTransfers());
            // the handle was released before the report; the transport frees a cancelled copy's slot when its thread stops
            await(() -> producer.audit().transport().transfers() == 0, "the transport let go of the cancelled write");
        }
    }

    @Test
    void badInputIsRefusedAtTheCall()
    {
        try (EngineHarness harness = new EngineHarness()) {
            ProducerRank producer = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), true, b -> b.modes(Set.of(TransferMode.PULL)));
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(KvBridgeException.class, () -> producer.prefillFinished("a,b", ids(1))).code());
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(KvBridgeException.class, () -> producer.prefillFinished("HB:x", ids(1))).code());
            assertEquals(ErrorCode.BLOCK_OUT_OF_RANGE, assertThrows(KvBridgeException.class, () -> producer.prefillFinished("x", ids(16))).code());
            KvBridgeException groups = assertThrows(KvBridgeException.class, () -> producer.prefillFinished("x", BlockIds.of()));
            assertTrue(groups.getMessage().contains("0 groups but the cache has 1"), groups.getMessage());
            TransferParams params = producer.prefillFinished("twice", ids(1));
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(KvBridgeException.class, () -> producer.prefillFinished("twice", ids(2))).code());
            KvBridgeException push = assertThrows(KvBridgeException.class, () -> consumer.blocksAllocated("d", params, TransferMode.PUSH, ids(1)));
            assertTrue(push.getMessage().contains("mode=PUSH is not enabled"), push.getMessage());
            consumer.close();
            assertEquals(ErrorCode.CLOSED, assertThrows(KvBridgeException.class, () -> consumer.blocksAllocated("d", params, TransferMode.PULL, ids(1)))
                    .code());
        }
    }
}
