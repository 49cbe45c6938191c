package io.kvbridge.core.sidechannel;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * An estimate of how far a peer's monotonic clock is ahead of ours, from one request-reply round
 * trip: the peer stamped its reply at some instant between our send and our receive, so assuming
 * the midpoint, {@code offset = remote - (send + receive) / 2}, with an error of at most half the
 * round trip. Of several samples, the one with the smallest round trip is the most precise.
 *
 * @param offsetNanos remote clock minus local clock, in nanoseconds.
 * @param roundTripNanos the round trip of the sample; its half bounds the error.
 */
public record ClockOffset(long offsetNanos, long roundTripNanos)
{
    /** Validates the values. */
    public ClockOffset
    {
        checkArgument(roundTripNanos >= 0, "roundTripNanos=%d is negative", roundTripNanos);
    }

    /**
     * Estimates the offset from one round trip.
     *
     * @param sendNanos local monotonic time just before the request was sent.
     * @param remoteNanos the peer's monotonic time written into its reply.
     * @param receiveNanos local monotonic time just after the reply arrived.
     * @return the sample.
     */
    public static ClockOffset sample(long sendNanos, long remoteNanos, long receiveNanos)
    {
        long roundTrip = receiveNanos - sendNanos;
        checkArgument(roundTrip >= 0, "receiveNanos=%d is before sendNanos=%d", receiveNanos, sendNanos);
        return new ClockOffset(remoteNanos - (sendNanos + roundTrip / 2), roundTrip);
    }

    /**
     * Chooses the more precise of two samples.
     *
     * @param other another sample, or null.
     * @return the sample with the smaller round trip (this one on a tie).
     */
    public ClockOffset better(ClockOffset other)
    {
        return other == null || roundTripNanos <= other.roundTripNanos ? this : other;
    }

    /**
     * Converts a peer's monotonic time (e.g. a lease deadline it sent) to ours.
     *
     * @param remoteNanos time on the peer's clock.
     * @return the same instant on the local clock.
     */
    public long toLocalNanos(long remoteNanos)
    {
        return remoteNanos - offsetNanos;
    }

    /**
     * Converts a local monotonic time to the peer's clock.
     *
     * @param localNanos time on the local clock.
     * @return the same instant on the peer's clock.
     */
    public long toRemoteNanos(long localNanos)
    {
        return localNanos + offsetNanos;
    }
}
