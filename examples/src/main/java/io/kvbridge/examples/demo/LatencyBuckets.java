package io.kvbridge.examples.demo;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.distribution.HistogramSnapshot;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A latency histogram read from the bridge's own timers ({@code kvbridge.request.time},
 * {@code kvbridge.handover.time}, whose buckets are their service level objectives), added up over
 * an engine's hosts, and its percentiles. A percentile is the upper bound of the first bucket that
 * holds it: histograms from several JVMs add up exactly, where percentiles computed in each would not.
 *
 * <p>As an audit value: {@code {"boundsMs": [...], "cumulative": [...], "count": n}}.
 */
final class LatencyBuckets
{
    private LatencyBuckets()
    {
    }

    /**
     * Reads every timer of a name whose tags include the given ones, their buckets added up.
     *
     * @param registry the bridge's registry.
     * @param name the timer's name.
     * @param tags key, value, ...
     * @return the histogram as an audit value; empty buckets when no such timer exists.
     */
    static Map<String, Object> read(MeterRegistry registry, String name, String... tags)
    {
        List<Double> bounds = new ArrayList<>();
        List<Long> cumulative = new ArrayList<>();
        long count = 0;
        for (Timer timer : registry.find(name).tags(tags).timers()) {
            HistogramSnapshot snapshot = timer.takeSnapshot();
            count += snapshot.count();
            CountAtBucket[] buckets = snapshot.histogramCounts();
            for (int i = 0; i < buckets.length; i++) {
                if (bounds.size() <= i) {
                    bounds.add(buckets[i].bucket(TimeUnit.MILLISECONDS));
                    cumulative.add(0L);
                }
                cumulative.set(i, cumulative.get(i) + (long) buckets[i].count());
            }
        }
        return histogram(bounds, cumulative, count);
    }

    /**
     * Adds two histograms of the same buckets (one engine's hosts).
     *
     * @param first an audit value of {@link #read}, or null.
     * @param second another.
     * @return their sum.
     */
    @SuppressWarnings("unchecked")
    static Map<String, Object> add(Object first, Object second)
    {
        if (first == null) {
            return (Map<String, Object>) second;
        }
        Map<String, Object> a = (Map<String, Object>) first;
        Map<String, Object> b = (Map<String, Object>) second;
        List<Double> bounds = numbers(a.get("boundsMs")).stream().map(Number::doubleValue).toList();
        List<Number> ofA = numbers(a.get("cumulative"));
        List<Number> ofB = numbers(b.get("cumulative"));
        if (bounds.isEmpty()) {
            return b;
        }
        List<Long> cumulative = new ArrayList<>();
        for (int i = 0; i < bounds.size(); i++) {
            cumulative.add(ofA.get(i).longValue() + (i < ofB.size() ? ofB.get(i).longValue() : 0));
        }
        return histogram(bounds, cumulative, ((Number) a.get("count")).longValue() + ((Number) b.get("count")).longValue());
    }

    /**
     * Returns the count and the 50th and 99th percentiles of a histogram.
     *
     * @param value an audit value of {@link #read} or {@link #add}.
     * @return {@code count}, {@code p50Ms}, {@code p99Ms}: each the upper bound of the bucket holding
     *     it, -1 above the last bucket or without requests.
     */
    @SuppressWarnings("unchecked")
    static Map<String, Object> percentiles(Object value)
    {
        Map<String, Object> histogram = (Map<String, Object>) value;
        long count = ((Number) histogram.get("count")).longValue();
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("count", count);
        result.put("p50Ms", percentile(histogram, count, 0.50));
        result.put("p99Ms", percentile(histogram, count, 0.99));
        return result;
    }

    private static double percentile(Map<String, Object> histogram, long count, double quantile)
    {
        List<Number> bounds = numbers(histogram.get("boundsMs"));
        List<Number> cumulative = numbers(histogram.get("cumulative"));
        long rank = (long) Math.ceil(quantile * count);
        for (int i = 0; count > 0 && i < bounds.size(); i++) {
            if (cumulative.get(i).longValue() >= rank) {
                return bounds.get(i).doubleValue();
            }
        }
        return -1;
    }

    private static Map<String, Object> histogram(List<Double> bounds, List<Long> cumulative, long count)
    {
        Map<String, Object> histogram = new LinkedHashMap<>();
        histogram.put("boundsMs", List.copyOf(bounds));
        histogram.put("cumulative", List.copyOf(cumulative));
        histogram.put("count", count);
        return histogram;
    }

    @SuppressWarnings("unchecked")
    private static List<Number> numbers(Object list)
    {
        return (List<Number>) list;
    }
}
