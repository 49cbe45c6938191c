package io.kvbridge.examples.demo;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Each request's time from the start of its prefill (the scheduler asking the producer for it) to
 * decode-ready (the poll that saw every decoder rank report it received), as the scheduler sees them.
 * Records into arrays sized once for the run, so that recording allocates nothing per request;
 * the percentiles are exact (nearest rank over the recorded times), not bucket bounds.
 */
final class DecodeReadyTimes
{
    private final long[] startNanos;
    private final long[] readyNanos;

    /** @param requests the run's requests, indexed from 0. */
    DecodeReadyTimes(int requests)
    {
        this.startNanos = new long[requests];
        this.readyNanos = new long[requests];
    }

    /** The request's prefill starts now. */
    void started(int request, long nowNanos)
    {
        startNanos[request] = nowNanos;
    }

    /** Every decoder rank reported the request received; the first report counts. */
    void ready(int request, long nowNanos)
    {
        if (readyNanos[request] == 0) {
            readyNanos[request] = nowNanos;
        }
    }

    /**
     * @return {@code count} (requests that became decode-ready), {@code p50Ms} and {@code p99Ms} (nearest
     *     rank, -1 without requests).
     */
    Map<String, Object> audit()
    {
        long[] times = new long[readyNanos.length];
        int count = 0;
        for (int i = 0; i < readyNanos.length; i++) {
            if (readyNanos[i] != 0) {
                times[count++] = readyNanos[i] - startNanos[i];
            }
        }
        Arrays.sort(times, 0, count);
        Map<String, Object> audit = new LinkedHashMap<>();
        audit.put("count", count);
        audit.put("p50Ms", percentile(times, count, 50));
        audit.put("p99Ms", percentile(times, count, 99));
        return audit;
    }

    private static double percentile(long[] sorted, int count, int percent)
    {
        if (count == 0) {
            return -1;
        }
        int rank = (int) Math.ceil(percent / 100.0 * count);
        return Math.round(sorted[Math.max(rank, 1) - 1] / 1_000.0) / 1_000.0;
    }
}
