package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * When the one-line transfer summary is logged: every {@code interval} on {@code scheduler}, or
 * never when the interval is zero. {@link EngineServices} owns the scheduler and shuts it down
 * when it closes.
 *
 * @param interval time between two summaries; zero for none.
 * @param scheduler runs the summaries.
 */
public record SummarySchedule(Duration interval, ScheduledExecutorService scheduler)
{
    /** Checks the interval, which may not be negative. */
    public SummarySchedule
    {
        requireNonNull(interval, "interval is null");
        requireNonNull(scheduler, "scheduler is null");
        KvBridgeException.checkArgument(!interval.isNegative(), "summary interval=%s is negative; pass zero for no summary", interval);
    }

    /**
     * A schedule on a daemon thread of its own, started only when the first summary is scheduled.
     *
     * @param interval time between two summaries; zero for none, so no thread is started.
     * @return the schedule.
     */
    public static SummarySchedule onOwnThread(Duration interval)
    {
        return new SummarySchedule(interval, Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("kvbridge-metrics-summary").factory()));
    }

    /** {@return whether summaries are logged at all} */
    public boolean enabled()
    {
        return !interval.isZero();
    }
}
