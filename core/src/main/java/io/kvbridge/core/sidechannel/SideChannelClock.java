package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import java.time.InstantSource;
import java.util.function.LongSupplier;

/**
 * The clocks the side channel reads: a monotonic clock for round trips, clock offsets and idle
 * times, and the wall clock (as an {@link InstantSource}) for authentication timestamps, which must
 * be comparable across hosts. Tests substitute a manual clock so that nothing waits for real time.
 */
public interface SideChannelClock extends InstantSource
{
    /**
     * Reads the monotonic clock.
     *
     * @return nanoseconds from an arbitrary origin; never decreases.
     */
    long monotonicNanos();

    /**
     * Returns the system clocks.
     *
     * @return {@link System#nanoTime()} and {@link Instant#now()}.
     */
    static SideChannelClock system()
    {
        return of(System::nanoTime, InstantSource.system());
    }

    /**
     * Combines a monotonic clock and a wall clock, such as an embedder passes to the bridge's builder.
     *
     * @param monotonicNanos read by {@link #monotonicNanos()}.
     * @param wallClock read by {@link #instant()} and {@link #millis()}.
     * @return the clock.
     */
    static SideChannelClock of(LongSupplier monotonicNanos, InstantSource wallClock)
    {
        requireNonNull(monotonicNanos, "monotonicNanos is null");
        requireNonNull(wallClock, "wallClock is null");
        return new SideChannelClock()
        {
            @Override
            public long monotonicNanos()
            {
                return monotonicNanos.getAsLong();
            }

            @Override
            public Instant instant()
            {
                return wallClock.instant();
            }

            @Override
            public long millis()
            {
                return wallClock.millis();
            }
        };
    }
}
