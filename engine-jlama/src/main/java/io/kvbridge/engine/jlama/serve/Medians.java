package io.kvbridge.engine.jlama.serve;

import java.util.List;
import java.util.function.ToLongFunction;

/** The medians the benchmarks' reports print: of one timed value over a length's samples, in milliseconds. */
final class Medians
{
    private Medians()
    {
    }

    /**
     * Returns the median of one value of the samples; the mean of the middle two for an even count.
     *
     * @param samples the samples of one length.
     * @param nanos the value, in nanoseconds.
     * @param <T> the sample type.
     * @return milliseconds; NaN without samples.
     */
    static <T> double millis(List<T> samples, ToLongFunction<? super T> nanos)
    {
        long[] values = samples.stream().mapToLong(nanos).sorted().toArray();
        if (values.length == 0) {
            return Double.NaN;
        }
        int mid = values.length / 2;
        double median = values.length % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
        return median / 1e6;
    }
}
