package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The decode-ready recorder: exact nearest-rank percentiles over the requests that became ready. */
final class DecodeReadyTimesTest
{
    @Test
    void percentilesAreNearestRankOverTheReadyRequests()
    {
        DecodeReadyTimes times = new DecodeReadyTimes(101);
        for (int request = 0; request < 100; request++) {
            // request r takes (r + 1) ms, recorded in a shuffled order
            int r = request * 37 % 100;
            times.started(r, 5_000_000_000L);
            times.ready(r, 5_000_000_000L + (r + 1) * 1_000_000L);
        }
        // request 100 started but never became ready (failed): not counted
        times.started(100, 1L);
        assertEquals(Map.of("count", 100, "p50Ms", 50.0, "p99Ms", 99.0), times.audit());
    }

    @Test
    void onlyTheFirstReportCounts()
    {
        DecodeReadyTimes times = new DecodeReadyTimes(1);
        times.started(0, 10_000_000L);
        times.ready(0, 12_500_000L);
        times.ready(0, 90_000_000L);
        assertEquals(Map.of("count", 1, "p50Ms", 2.5, "p99Ms", 2.5), times.audit());
    }

    @Test
    void noRequestReadyGivesMinusOne()
    {
        assertEquals(Map.of("count", 0, "p50Ms", -1.0, "p99Ms", -1.0), new DecodeReadyTimes(3).audit());
    }
}
