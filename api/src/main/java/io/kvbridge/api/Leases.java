package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * How a producer's lease on a request's blocks is kept alive while a consumer waits, in one
 * place: the consumer's heartbeat period and the producer's extension on each heartbeat.
 *
 * <p>A producer holds a finished request's blocks for its lease ({@code leaseMillis} in the
 * {@link TransferParams}). A consumer still waiting for them sends a heartbeat every sixth of that
 * lease, and each heartbeat moves the producer's deadline to {@code max(deadline, now + 2/3 lease)}:
 *
 * <pre>
 *   lease 30 s:  heartbeat every 5 s, each extending to at least now + 20 s
 *   time  0    5    10   15   20   25   30
 *   HB         |    |    |    |    |    |      four heartbeats may be lost before the lease ends
 * </pre>
 *
 * Times are nanoseconds of one monotonic clock ({@link System#nanoTime()} or the engine's clock),
 * compared by difference so that the clock may start anywhere. Durations are capped at
 * {@link #LONGEST_NANOS}, so adding one to a clock reading never wraps around in a comparison.
 */
public final class Leases
{
    /** Heartbeats a consumer sends per producer lease. */
    public static final int HEARTBEATS_PER_LEASE = 6;

    /** The longest duration these rules compute (about 146 years); longer ones are capped to it. */
    public static final long LONGEST_NANOS = 1L << 62;

    private static final long NANOS_PER_MILLI = 1_000_000L;

    private Leases()
    {
    }

    /**
     * Returns how often a consumer sends heartbeats for a request: a sixth of the producer's lease,
     * in whole milliseconds, at least one.
     *
     * @param leaseMillis the producer's lease in milliseconds, as its {@link TransferParams} carry it
     *     (a peer's value: large ones are capped, not trusted to fit).
     * @return {@code max(1, leaseMillis / 6)} milliseconds in nanoseconds, at most {@link #LONGEST_NANOS}.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} naming the value when
     *     {@code leaseMillis} is not positive.
     */
    public static long heartbeatPeriodNanos(long leaseMillis)
    {
        checkArgument(leaseMillis > 0, "leaseMillis=%d is not positive", leaseMillis);
        long millis = Math.max(1, leaseMillis / HEARTBEATS_PER_LEASE);
        return millis >= LONGEST_NANOS / NANOS_PER_MILLI ? LONGEST_NANOS : millis * NANOS_PER_MILLI;
    }

    /**
     * Returns how far past a heartbeat a producer holds the request: two thirds of its lease.
     *
     * @param leaseNanos the producer's lease in nanoseconds.
     * @return {@code leaseNanos x 2 / 3} (rounded down, without overflow), at most {@link #LONGEST_NANOS}.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} naming the value when
     *     {@code leaseNanos} is not positive.
     */
    public static long extensionNanos(long leaseNanos)
    {
        checkArgument(leaseNanos > 0, "leaseNanos=%d is not positive", leaseNanos);
        long lease = Math.min(leaseNanos, LONGEST_NANOS);
        return lease / 3 * 2 + lease % 3 * 2 / 3;
    }

    /**
     * Returns a held request's deadline after a heartbeat: extended to {@code now + 2/3 lease} when
     * that is later, never shortened.
     *
     * @param deadlineNanos the request's deadline now.
     * @param nowNanos the time of the heartbeat, on the deadline's clock.
     * @param leaseNanos the producer's lease in nanoseconds.
     * @return the later of {@code deadlineNanos} and {@code nowNanos + extensionNanos(leaseNanos)}.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} naming the value when
     *     {@code leaseNanos} is not positive.
     */
    public static long extendedDeadline(long deadlineNanos, long nowNanos, long leaseNanos)
    {
        long extended = nowNanos + extensionNanos(leaseNanos);
        return extended - deadlineNanos > 0 ? extended : deadlineNanos;
    }
}
