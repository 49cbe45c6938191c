package io.kvbridge.transport;

import java.util.concurrent.TimeUnit;

/**
 * When a warning that peers can make repeat is written again: the first time, then at most once an
 * interval, so that a flood of refusals or broken connections costs one log line in ten seconds
 * while its counts keep growing. Not thread safe: each user calls it under its own lock or from its
 * one thread.
 */
public final class LogInterval
{
    /** The interval the toolkit's transports log such warnings at. */
    public static final long TEN_SECONDS_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final long intervalNanos;
    private boolean logged;
    private long lastNanos;

    /**
     * Creates one, due at once.
     *
     * @param intervalNanos the least time between two lines; positive.
     */
    public LogInterval(long intervalNanos)
    {
        if (intervalNanos <= 0) {
            throw new IllegalArgumentException("intervalNanos=" + intervalNanos + " is not positive");
        }
        this.intervalNanos = intervalNanos;
    }

    /**
     * Says whether a line is due now, and if so counts it as written.
     *
     * @param nowNanos the monotonic clock, {@link System#nanoTime()}.
     * @return true the first time and once the interval passed since the last line.
     */
    public boolean due(long nowNanos)
    {
        if (logged && nowNanos - lastNanos <= intervalNanos) {
            return false;
        }
        logged = true;
        lastNanos = nowNanos;
        return true;
    }
}
