package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.geometry.Rank;
import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The per-layer announcement runs inside the engine's forward pass: it must allocate nothing per call.
 * Counted with the JVM's per-thread allocation counter over calls after a warm-up, so that what the
 * compiler allocates while it warms up is not counted. The bound is under one byte per call: the
 * smallest object is 16 bytes, so any allocation a call makes fails it, while the few hundred bytes
 * the JVM itself sometimes charges to a thread on a loaded machine (seen in 5 of 11 runs, with no
 * allocation in the code path) do not.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class LayerStreamAllocationTest
{
    private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int LAYERS = 64;
    private static final int REQUESTS = 1_000;
    private static final int MEASURED = 200;

    @Test
    void announcingALayerAllocatesNothing()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache cache = harness.cache(TestCache.Shape.of(LAYERS, 4, false), Rank.single());
            ProducerRank producer = harness.producer("p", cache, false, b -> b);
            String[] layers = new String[LAYERS];
            for (int l = 0; l < LAYERS; l++) {
                layers[l] = TestCache.layerName(l);
            }
            String[] requests = new String[REQUESTS];
            for (int r = 0; r < REQUESTS; r++) {
                requests[r] = "alloc-" + r;
                producer.prefillStarted(requests[r], ids(r % 4));
            }
            announce(producer, requests, layers, 0, REQUESTS - MEASURED);
            // what reading the counter itself costs, so that only the calls are counted
            long empty = -THREADS.getCurrentThreadAllocatedBytes() + THREADS.getCurrentThreadAllocatedBytes();
            long before = THREADS.getCurrentThreadAllocatedBytes();
            announce(producer, requests, layers, REQUESTS - MEASURED, REQUESTS);
            long after = THREADS.getCurrentThreadAllocatedBytes();
            assertTrue(before >= 0, "allocation counting is off in this JVM");
            long calls = (long) MEASURED * LAYERS;
            System.out.printf("layerComputed: %d bytes over %d calls (counter %d)%n", after - before - empty, calls, empty);
            assertTrue(after - before - empty < calls, (after - before - empty) + " bytes allocated by " + calls + " layerComputed calls: under one per call expected");
        }
    }

    @Test
    void askingWhetherALayerLandedAllocatesNothing()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            ProducerRank producer = harness.producer("p", harness.cache(shape, Rank.single()), true, b -> b.streamMinTokens(0));
            ConsumerRank consumer = harness.consumer("d", harness.cache(shape, Rank.single()), true, b -> b);
            consumer.blocksAllocated("d-alloc", producer.prefillStarted("p-alloc", ids(0)), io.kvbridge.api.TransferMode.PUSH, ids(1));
            String first = TestCache.layerName(0);
            String second = TestCache.layerName(1);
            producer.layerComputed("p-alloc", first);
            EngineHarness.await(() -> consumer.layerLoaded("d-alloc", first), "layer 0 loaded");
            int loaded = ask(consumer, first, second, 20_000);
            long empty = -THREADS.getCurrentThreadAllocatedBytes() + THREADS.getCurrentThreadAllocatedBytes();
            long before = THREADS.getCurrentThreadAllocatedBytes();
            loaded += ask(consumer, first, second, 20_000);
            long after = THREADS.getCurrentThreadAllocatedBytes();
            assertEquals(80_000, loaded, "layer 0 loaded, layer 1 not, on every call");
            System.out.printf("layerLoaded: %d bytes over %d calls%n", after - before - empty, 40_000);
            assertTrue(after - before - empty < 40_000, (after - before - empty) + " bytes allocated by 40000 layerLoaded calls: under one per call expected");
        }
    }

    private static int ask(ConsumerRank consumer, String loaded, String notLoaded, int times)
    {
        int count = 0;
        for (int i = 0; i < times; i++) {
            count += consumer.layerLoaded("d-alloc", loaded) ? 1 : 0;
            count += consumer.layerLoaded("d-alloc", notLoaded) ? 0 : 1;
        }
        return count;
    }

    private static void announce(ProducerRank producer, String[] requests, String[] layers, int from, int to)
    {
        for (int r = from; r < to; r++) {
            for (String layer : layers) {
                producer.layerComputed(requests[r], layer);
            }
        }
    }
}
