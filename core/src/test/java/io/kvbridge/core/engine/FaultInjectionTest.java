package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.ManualClock;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.testkit.FaultInjectingBackendFactory;
import io.kvbridge.testkit.FaultInjectingTransferBackend;
import io.kvbridge.testkit.FaultPlan;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A thousand requests, half push and half pull, over a transport that drops, duplicates and delays
 * notifications and fails posts: every request ends exactly once on both sides, no block is freed
 * twice, and nothing stays held or registered.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class FaultInjectionTest
{
    private static final int REQUESTS = 1_000;
    private static final int BATCH = 100;

    @Test
    void everyRequestEndsExactlyOnceUnderDropsDuplicatesDelaysAndFailedPosts()
    {
        FaultPlan plan = new FaultPlan(20_261_129L, 0.03, 0.05, 0.10, 4, 0.02, 0, 0);
        FaultInjectingBackendFactory faults = new FaultInjectingBackendFactory(new LocalBackendFactory(), plan);
        ManualClock clock = new ManualClock();
        List<String> received = new ArrayList<>();
        List<ReceiveFailure> failed = new ArrayList<>();
        List<FreedRequest> freed = new ArrayList<>();
        ProducerRank producer;
        ConsumerRank consumer;
        try (EngineHarness harness = new EngineHarness(faults, clock)) {
            TestCache.Shape shape = TestCache.Shape.of(1, REQUESTS, false);
            TestCache producerCache = harness.cache(shape, Rank.single());
            TestCache consumerCache = harness.cache(shape, Rank.single());
            producer = harness.producer("p", producerCache, true, b -> b);
            consumer = harness.consumer("d", consumerCache, true, b -> b.registrationTimeout(Duration.ofSeconds(60)));
            for (int start = 0; start < REQUESTS; start += BATCH) {
                for (int i = start; i < start + BATCH; i++) {
                    producerCache.fill(i, new int[] {i});
                    TransferParams params = producer.prefillFinished("p-" + i, ids(i));
                    consumer.blocksAllocated("c-" + i, params, i % 2 == 0 ? TransferMode.PUSH : TransferMode.PULL, ids(REQUESTS - 1 - i));
                }
                int end = start + BATCH;
                awaitQuiet(consumer, received, failed);
                // whatever lost a notification now waits for a deadline: move the clock past every one of them
                clock.advance(Duration.ofSeconds(61));
                await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == end, "consumer ends");
                await(() -> EngineHarness.drain(producer, freed).size() == end, "producer ends");
            }
            for (String id : received) {
                int i = Integer.parseInt(id.substring(2));
                consumerCache.check(i, new int[] {REQUESTS - 1 - i}, 1);
            }
            try {
                await(() -> producer.audit().idle() && consumer.audit().idle(), "idle audits");
            }
            catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + ": producer " + producer.audit() + ", consumer " + consumer.audit(), e);
            }
            assertEquals(0, harness.services.audit().leasesHeld());
        }
        Set<String> consumerIds = new HashSet<>(received);
        for (ReceiveFailure failure : failed) {
            assertTrue(consumerIds.add(failure.requestId()), "reported twice: " + failure.requestId());
        }
        assertEquals(REQUESTS, received.size() + failed.size());
        assertEquals(REQUESTS, consumerIds.size(), "every consumer request ended exactly once");
        Set<String> producerIds = new HashSet<>();
        for (FreedRequest request : freed) {
            assertTrue(producerIds.add(request.requestId()), "blocks freed twice: " + request);
        }
        assertEquals(REQUESTS, producerIds.size(), "every producer request ended exactly once");
        int drops = 0;
        int duplicates = 0;
        int delays = 0;
        int failedPosts = 0;
        for (FaultInjectingTransferBackend backend : faults.created()) {
            FaultInjectingTransferBackend.FaultCounters counters = backend.counters();
            drops += counters.droppedNotifications;
            duplicates += counters.duplicatedNotifications;
            delays += counters.delayedNotifications;
            failedPosts += counters.failedPosts;
            assertEquals(BackendResources.NONE, backend.resources(), "nothing registered after close");
        }
        assertTrue(drops > 0 && duplicates > 0 && delays > 0 && failedPosts > 0,
                "faults injected: drops=" + drops + " duplicates=" + duplicates + " delays=" + delays + " failedPosts=" + failedPosts);
        assertTrue(received.size() > REQUESTS / 2, "most requests still got through: " + received.size());
        assertTrue(!failed.isEmpty(), "some requests failed");
    }

    /** Waits until the consumer reports nothing new for a while: what is left waits for a deadline. */
    private static void awaitQuiet(ConsumerRank consumer, List<String> received, List<ReceiveFailure> failed)
    {
        int seen = -1;
        long quietSince = System.nanoTime();
        while (System.nanoTime() - quietSince < 300_000_000L) {
            EngineHarness.collect(consumer, received, failed);
            int now = received.size() + failed.size();
            if (now != seen) {
                seen = now;
                quietSince = System.nanoTime();
            }
            try {
                Thread.sleep(5);
            }
            catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }
}
