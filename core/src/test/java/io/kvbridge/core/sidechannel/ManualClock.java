package io.kvbridge.core.sidechannel;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/** A clock that moves only when told to, so idle times and windows need no sleeping. */
public final class ManualClock
        implements SideChannelClock
{
    private final AtomicLong nanos = new AtomicLong(1_000_000_000_000L);
    private final AtomicLong millis = new AtomicLong(1_750_000_000_000L);

    public void advance(Duration duration)
    {
        nanos.addAndGet(duration.toNanos());
        millis.addAndGet(duration.toMillis());
    }

    @Override
    public long monotonicNanos()
    {
        return nanos.get();
    }

    @Override
    public Instant instant()
    {
        return Instant.ofEpochMilli(millis.get());
    }
}
