package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.TransferMode;
import io.kvbridge.spi.geometry.Rank;
import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A decoder receiving streamed requests, its worker stepped here on the test thread, counted with
 * the JVM's per-thread allocation counter after warm-up requests. While its requests wait for their
 * next layer, a step allocates nothing: the bound is under one byte per step, so that any object a
 * step makes fails it. Each layer that arrives is bounded too, at what it costs today (the sealed
 * notification opened and parsed; in a pull also the READ posted for it): a cost per step or per
 * waiting request that creeps into the receive path multiplies by the thousands of steps per layer
 * and fails it.
 *
 * <p>Off by default; run it alone, with {@code -Dkvbridge.measure=true}. In a JVM that ran the rest of
 * core's suite first, a step allocates 32 bytes more, each time, from a source not yet found (the
 * compiler's profile there keeps some object a step makes from being eliminated); until it is
 * found and removed these checks cannot be part of the suite.
 */
@EnabledIfSystemProperty(named = "kvbridge.measure", matches = "true",
        disabledReason = "opt-in (-Dkvbridge.measure=true): after core's other tests in one JVM a worker step allocates 32 B from a source not yet found")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class ConsumerStreamAllocationTest
{
    private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int LAYERS = 16;
    private static final int WARM_UP = 150;
    private static final int MEASURED = 50;
    private static final int IDLE_STEPS = 100_000;
    // what a layer costs a decoder today, about half the bound: a pushed one 1.6 KiB (1.5 of them parsing the PUSH_LAYERS
    // receipt), a pulled one 3.4 KiB (its PULL_LAYERS announcement opened and parsed, and the READ posted for it)
    private static final long PUSHED_LAYER_BYTES = 3 * 1024;
    private static final long PULLED_LAYER_BYTES = 6 * 1024;

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void stepsWhileStreamedRequestsWaitAllocateNothing(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            Ranks ranks = Ranks.open(harness);
            for (int r = 0; r < WARM_UP; r++) {
                ranks.request(mode, r, LAYERS, new long[3]);
            }
            // requests waiting for their second half of layers: the decoder's steps find nothing to do
            for (int r = WARM_UP; r < WARM_UP + 4; r++) {
                ranks.request(mode, r, LAYERS / 2, new long[3]);
            }
            steps(ranks.consumer, IDLE_STEPS);
            long empty = -THREADS.getCurrentThreadAllocatedBytes() + THREADS.getCurrentThreadAllocatedBytes();
            long before = THREADS.getCurrentThreadAllocatedBytes();
            steps(ranks.consumer, IDLE_STEPS);
            long allocated = THREADS.getCurrentThreadAllocatedBytes() - before - empty;
            System.out.printf("%s, idle: %d bytes over %d steps%n", mode, allocated, IDLE_STEPS);
            assertTrue(allocated < IDLE_STEPS, allocated + " bytes allocated by " + IDLE_STEPS + " steps of a decoder whose " + mode
                    + " requests wait for layers: under one per step expected");
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void eachLayerReceivedCostsOnlyItsNotification(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            Ranks ranks = Ranks.open(harness);
            long[] counted = new long[3];
            for (int r = 0; r < WARM_UP + MEASURED; r++) {
                ranks.request(mode, r, LAYERS, r >= WARM_UP ? counted : new long[3]);
            }
            System.out.printf("%s: %d bytes over %d layers, %d steps%n", mode, counted[0], counted[1], counted[2]);
            long bound = mode == TransferMode.PUSH ? PUSHED_LAYER_BYTES : PULLED_LAYER_BYTES;
            assertTrue(counted[0] < counted[1] * bound, counted[0] + " bytes allocated by a decoder while " + counted[1] + " " + mode
                    + " layers arrived (" + counted[2] + " steps): under " + bound + " per layer expected");
        }
    }

    @Test
    void parsingALandedLayersReceipt()
    {
        byte[] message = Messages.layersLanded("d-parse", "p-parse", java.util.List.of(TestCache.layerName(3)), 0x1234);
        for (int i = 0; i < 20_000; i++) {
            Messages.parse(message);
        }
        long empty = -THREADS.getCurrentThreadAllocatedBytes() + THREADS.getCurrentThreadAllocatedBytes();
        long before = THREADS.getCurrentThreadAllocatedBytes();
        int layers = 0;
        for (int i = 0; i < 1_000; i++) {
            layers += ((Messages.LayersLanded) Messages.parse(message)).layers().size();
        }
        long allocated = THREADS.getCurrentThreadAllocatedBytes() - before - empty;
        System.out.printf("parse PUSH_LAYERS: %d bytes per message%n", allocated / 1_000);
        assertTrue(layers == 1_000 && allocated < 1_000 * PUSHED_LAYER_BYTES, allocated / 1000 + " bytes per parsed receipt");
    }

    private static void steps(ConsumerRank consumer, int count)
    {
        for (int i = 0; i < count; i++) {
            consumer.runtime().step();
        }
    }

    /** A producer with its own worker, streaming every request, and a decoder stepped by hand. */
    private record Ranks(ProducerRank producer, ConsumerRank consumer, String[] layers)
    {
        static Ranks open(EngineHarness harness)
        {
            TestCache.Shape shape = TestCache.Shape.of(LAYERS, 16, false);
            String[] layers = new String[LAYERS];
            for (int l = 0; l < LAYERS; l++) {
                layers[l] = TestCache.layerName(l);
            }
            return new Ranks(harness.producer("p", harness.cache(shape, Rank.single()), true, b -> b.streamMinTokens(0)),
                    harness.consumer("d", harness.cache(shape, Rank.single()), false, b -> b), layers);
        }

        /**
         * Streams {@code computed} layers of request {@code r}, and, when that is all of them, waits until the decoder received it.
         * Counts in {@code counted} the bytes, layers and steps of every layer after the first (the first also carries the registration).
         */
        void request(TransferMode mode, int r, int computed, long[] counted)
        {
            String consumerId = "d-" + r;
            String producerId = "p-" + r;
            consumer.blocksAllocated(consumerId, producer.prefillStarted(producerId, ids(r % 8)), mode, ids(8 + r % 8));
            for (int l = 0; l < computed; l++) {
                producer.layerComputed(producerId, layers[l]);
                long empty = -THREADS.getCurrentThreadAllocatedBytes() + THREADS.getCurrentThreadAllocatedBytes();
                long before = THREADS.getCurrentThreadAllocatedBytes();
                long steps = stepUntilLoaded(consumerId, layers[l]);
                long after = THREADS.getCurrentThreadAllocatedBytes();
                if (l > 0) {
                    counted[0] += after - before - empty;
                    counted[1]++;
                    counted[2] += steps;
                }
            }
            if (computed == LAYERS) {
                producer.allLayersComputed(producerId);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (true) {
                    consumer.runtime().step();
                    ReceiveBatch batch = consumer.poll();
                    if (!batch.received().isEmpty() || !batch.failed().isEmpty()) {
                        assertTrue(batch.failed().isEmpty() && batch.received().contains(consumerId), "request " + consumerId + " received: " + batch);
                        break;
                    }
                    assertTrue(System.nanoTime() < deadline, "request " + consumerId + " not received within 20 s");
                    Thread.onSpinWait();
                }
            }
        }

        private long stepUntilLoaded(String requestId, String layer)
        {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            long steps = 0;
            while (!consumer.layerLoaded(requestId, layer)) {
                consumer.runtime().step();
                steps++;
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("layer " + layer + " of request " + requestId + " not loaded within 20 s");
                }
                Thread.onSpinWait();
            }
            return steps;
        }
    }
}
