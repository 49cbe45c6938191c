package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a C baseline measured, or why it could not.
 *
 * @param gigabytesPerSecond GB/s per block size, in the order measured; empty when unavailable.
 * @param reason why there is no baseline; empty when there is one.
 */
public record BaselineResult(Map<Long, Double> gigabytesPerSecond, String reason)
{
    public BaselineResult
    {
        gigabytesPerSecond = Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(gigabytesPerSecond, "gigabytesPerSecond is null")));
        requireNonNull(reason, "reason is null");
    }

    /**
     * A baseline that could not be measured.
     *
     * @param reason why, and how to fix it.
     * @return the result.
     */
    public static BaselineResult unavailable(String reason)
    {
        return new BaselineResult(Map.of(), reason);
    }

    public boolean available()
    {
        return reason.isEmpty();
    }
}
