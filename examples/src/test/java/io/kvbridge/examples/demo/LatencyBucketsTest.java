package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class LatencyBucketsTest
{
    @Test
    void percentilesAreTheBucketBoundsHoldingThemOverEveryHost()
    {
        Map<String, Object> first = record(90, 9, 1, 0);
        Map<String, Object> sum = LatencyBuckets.add(LatencyBuckets.add(null, first), record(0, 0, 0, 0));
        assertEquals(Map.of("count", 100L, "p50Ms", 5.0, "p99Ms", 10.0), LatencyBuckets.percentiles(sum));
        // a second host's slow requests move the tail, not the median
        Map<String, Object> both = LatencyBuckets.add(first, record(0, 0, 10, 0));
        assertEquals(Map.of("count", 110L, "p50Ms", 5.0, "p99Ms", 1000.0), LatencyBuckets.percentiles(both));
        assertEquals(Map.of("count", 1L, "p50Ms", -1.0, "p99Ms", -1.0), LatencyBuckets.percentiles(record(0, 0, 0, 1)));
        assertEquals(Map.of("count", 0L, "p50Ms", -1.0, "p99Ms", -1.0), LatencyBuckets.percentiles(record(0, 0, 0, 0)));
    }

    @Test
    void onlyTheTaggedTimersAreRead()
    {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Timer.builder("kvbridge.request.time").tags("side", "consumer", "mode", "push").serviceLevelObjectives(Duration.ofMillis(5))
                .register(registry).record(Duration.ofMillis(2));
        Timer.builder("kvbridge.request.time").tags("side", "consumer", "mode", "pull").serviceLevelObjectives(Duration.ofMillis(5))
                .register(registry).record(Duration.ofMillis(3));
        Timer.builder("kvbridge.request.time").tags("side", "producer", "mode", "push").serviceLevelObjectives(Duration.ofMillis(5))
                .register(registry).record(Duration.ofMillis(4));
        Map<String, Object> consumer = LatencyBuckets.read(registry, "kvbridge.request.time", "side", "consumer");
        assertEquals(2L, consumer.get("count"));
        assertEquals(Map.of("count", 2L, "p50Ms", 5.0, "p99Ms", 5.0), LatencyBuckets.percentiles(consumer));
    }

    /** A registry's timer with buckets at 5, 10 and 1000 ms, recording this many requests of 1 ms, 7 ms, 500 ms and 2 s. */
    private static Map<String, Object> record(int fast, int medium, int slow, int beyond)
    {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Timer timer = Timer.builder("kvbridge.handover.time").tags("mode", "push")
                .serviceLevelObjectives(Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(1000)).register(registry);
        for (int i = 0; i < fast; i++) {
            timer.record(Duration.ofMillis(1));
        }
        for (int i = 0; i < medium; i++) {
            timer.record(Duration.ofMillis(7));
        }
        for (int i = 0; i < slow; i++) {
            timer.record(Duration.ofMillis(500));
        }
        for (int i = 0; i < beyond; i++) {
            timer.record(Duration.ofSeconds(2));
        }
        return LatencyBuckets.read(registry, "kvbridge.handover.time");
    }
}
