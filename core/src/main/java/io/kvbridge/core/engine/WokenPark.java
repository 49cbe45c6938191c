package io.kvbridge.core.engine;

/**
 * How long a rank worker parks when its transport wakes it: a transfer's end, a notification and a
 * command each end the park, so the park only waits for the next timer (the role's leases,
 * deadlines and heartbeats, a transfer's deadline, the idle-engine eviction check), and for at most
 * {@link #MAX_NANOS}. A rank waiting on a stopped peer then wakes for its timers and a few times a
 * second, not 50 or 2,000 times.
 */
final class WokenPark
{
    static final long MAX_NANOS = 100_000_000;
    // while released handles wait to be retried, or a timer is still due after the round's tick,
    // which nothing signals: the role chose to wait, so the worker retries at this pace, never spins
    static final long RETRY_NANOS = 20_000_000;

    private WokenPark()
    {
    }

    /**
     * Computes the park.
     *
     * @param now the services' clock.
     * @param retrying whether released handles wait to be retried.
     * @param timer when the role's next timer is due, or {@code Long.MAX_VALUE}.
     * @param deadline the earliest in-flight transfer's deadline, or {@code Long.MAX_VALUE}.
     * @param eviction when idle remote engines are next evicted.
     * @param minimum the shortest park.
     * @return nanoseconds to park.
     */
    static long nanos(long now, boolean retrying, long timer, long deadline, long eviction, long minimum)
    {
        long park = retrying ? RETRY_NANOS : MAX_NANOS;
        park = untilDue(park, now, timer);
        park = untilDue(park, now, deadline);
        park = untilDue(park, now, eviction);
        return Math.max(park, minimum);
    }

    private static long untilDue(long park, long now, long due)
    {
        if (due == Long.MAX_VALUE) {
            return park;
        }
        long left = due - now;
        return left <= 0 ? Math.min(park, RETRY_NANOS) : Math.min(left, park);
    }
}
