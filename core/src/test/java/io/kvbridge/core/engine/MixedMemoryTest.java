package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.testkit.FaultInjectingBackendFactory;
import io.kvbridge.testkit.FaultPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Caches with host and device layers (device memory simulated by the local transport): READs split
 * per memory kind, and the producer hears of the request only when every part succeeded.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class MixedMemoryTest
{
    private static final TestCache.Shape SHAPE = TestCache.Shape.of(3, 16, false).onDevice(1);

    @Test
    void pullSplitsReadsPerMemoryKindAndNotifiesOnceAfterAllSucceeded()
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            TestCache producerCache = harness.cache(SHAPE, Rank.single());
            TestCache consumerCache = harness.cache(SHAPE, Rank.single());
            ProducerRank producer = harness.producer("p", producerCache, true, b -> b.modes(Set.of(TransferMode.PULL)));
            ConsumerRank consumer = harness.consumer("d", consumerCache, true, b -> b.modes(Set.of(TransferMode.PULL)));
            producerCache.fill(6, new int[] {1, 2, 3});
            consumer.blocksAllocated("d", producer.prefillFinished("mixed", ids(1, 2, 3)), TransferMode.PULL, ids(4, 5, 6));
            List<String> received = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, received, new ArrayList<>()) != null && received.size() == 1, "received");
            consumerCache.check(6, new int[] {4, 5, 6}, 3);
            assertEquals(List.of(TransferOp.READ, TransferOp.READ), recording.postsBy(consumer.runtime().transport().agentName()), "one READ per memory kind");
            List<FreedRequest> freed = new ArrayList<>();
            await(() -> EngineHarness.drain(producer, freed).size() == 1, "freed");
            assertEquals(new FreedRequest("mixed", FreeReason.COMPLETED), freed.getFirst());
            assertEquals(List.of("mixed:1:" + TransferParams.formatEpoch(producer.epoch)), recording.receivedBy(producer.runtime().transport().agentName()), "one completion, sent after both parts");
        }
    }

    @Test
    void aFailedPartDropsTheCompletionAndFailsTheRequest()
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(
                new FaultInjectingBackendFactory(new LocalBackendFactory(), FaultPlan.none(3).withTransferErrors(0.5)));
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            TestCache producerCache = harness.cache(SHAPE, Rank.single());
            ProducerRank producer = harness.producer("p", producerCache, true, b -> b.modes(Set.of(TransferMode.PULL)));
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), true, b -> b.modes(Set.of(TransferMode.PULL)));
            int failures = 0;
            List<String> failedIds = new ArrayList<>();
            for (int request = 0; request < 12; request++) {
                TransferParams params = producer.prefillFinished("m" + request, ids(request));
                consumer.blocksAllocated("d" + request, params, TransferMode.PULL, ids(request));
                List<String> received = new ArrayList<>();
                List<ReceiveFailure> failed = new ArrayList<>();
                await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "ended");
                String completion = "m" + request + ":1:" + TransferParams.formatEpoch(producer.epoch);
                if (failed.isEmpty()) {
                    await(() -> recording.receivedBy(producer.runtime().transport().agentName()).contains(completion), "completion after both parts");
                }
                else {
                    failures++;
                    failedIds.add(completion);
                    assertEquals(ErrorCode.TRANSFER_FAILED, failed.getFirst().code());
                }
            }
            int successes = 12 - failures;
            List<FreedRequest> freed = new ArrayList<>();
            await(() -> EngineHarness.drain(producer, freed).size() == successes, "successful requests freed");
            for (String completion : failedIds) {
                assertTrue(!recording.receivedBy(producer.runtime().transport().agentName()).contains(completion), "parked completion dropped: " + completion);
            }
            assertEquals(successes, recording.receivedBy(producer.runtime().transport().agentName()).size());
            assertTrue(failures > 0 && failures < 12, "both outcomes seen, failures=" + failures);
        }
    }

    @Test
    void pushOverMixedMemoryIsATypedErrorAtStart()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache cache = harness.cache(SHAPE, Rank.single());
            KvBridgeException producer = assertThrows(KvBridgeException.class, () -> harness.producer("p", cache, true, b -> b));
            assertEquals(ErrorCode.UNSUPPORTED, producer.code());
            assertTrue(producer.getMessage().contains("push does not support caches in mixed host and device memory"), producer.getMessage());
            KvBridgeException consumer = assertThrows(KvBridgeException.class,
                    () -> harness.consumer("d", cache, true, b -> b.modes(Set.of(TransferMode.PUSH))));
            assertEquals(ErrorCode.UNSUPPORTED, consumer.code());
            assertEquals(0, harness.services.audit().transport().registrations(), "nothing stays registered after the refusal");
        }
    }
}
