package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;

/**
 * The consumer's watchdog over a push registration: a consumer that registers a request with its
 * producer ranks fails it ({@code DEADLINE_EXCEEDED}) unless every writer reported its data in
 * place ({@code PUSH_DONE}) by {@code registered + registrationTimeout}
 * ({@link ConnectorSettings#registrationTimeout()}). A writer's {@code PUSH_FAILED} fails the
 * request at once; the watchdog is the fallback when the producer cannot reach the consumer at all.
 *
 * <p>Times are nanoseconds of one monotonic clock, compared by difference; a timeout longer than
 * {@link Leases#LONGEST_NANOS} counts as that long (a {@link Duration} may exceed what nanoseconds
 * can hold).
 */
public final class RegistrationWatchdog
{
    private static final Duration LONGEST = Duration.ofNanos(Leases.LONGEST_NANOS);

    private RegistrationWatchdog()
    {
    }

    /**
     * Returns the deadline of a push registration made at {@code nowNanos}.
     *
     * @param nowNanos when the request began, on the consumer's monotonic clock.
     * @param registrationTimeout how long the registration waits for every writer; positive.
     * @return {@code nowNanos + registrationTimeout} in nanoseconds, the timeout capped at
     *     {@link Leases#LONGEST_NANOS}.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} naming the value when the timeout is zero or negative.
     */
    public static long deadlineNanos(long nowNanos, Duration registrationTimeout)
    {
        requireNonNull(registrationTimeout, "registrationTimeout is null");
        KvBridgeException.checkArgument(registrationTimeout.isPositive(), "registrationTimeout=%s is not positive", registrationTimeout);
        long timeout = registrationTimeout.compareTo(LONGEST) >= 0 ? Leases.LONGEST_NANOS : registrationTimeout.toNanos();
        return nowNanos + timeout;
    }

    /**
     * Tells whether a deadline has passed.
     *
     * @param nowNanos the time now, on the deadline's clock.
     * @param deadlineNanos the deadline from {@link #deadlineNanos}.
     * @return true from the deadline on ({@code now - deadline >= 0}, so the clock may wrap).
     */
    public static boolean expired(long nowNanos, long deadlineNanos)
    {
        return nowNanos - deadlineNanos >= 0;
    }
}
