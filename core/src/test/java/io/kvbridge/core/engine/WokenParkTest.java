package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

final class WokenParkTest
{
    private static final long NOW = -5_000_000_000L;
    private static final long MIN = 50_000;

    @Test
    void parksUntilTheEarliestTimerAtMostTheMaximum()
    {
        assertEquals(WokenPark.MAX_NANOS, WokenPark.nanos(NOW, false, Long.MAX_VALUE, Long.MAX_VALUE, NOW + 10_000_000_000L, MIN));
        assertEquals(30_000_000, WokenPark.nanos(NOW, false, NOW + 30_000_000, NOW + 70_000_000, NOW + 1_000_000_000, MIN));
        assertEquals(7_000_000, WokenPark.nanos(NOW, false, NOW + 30_000_000, NOW + 7_000_000, NOW + 1_000_000_000, MIN));
        assertEquals(MIN, WokenPark.nanos(NOW, false, NOW + 10_000, Long.MAX_VALUE, NOW + 1_000_000_000, MIN));
    }

    @Test
    void aTimerStillDueOrARetryPacesAtTheRetryRateNeverSpins()
    {
        assertEquals(WokenPark.RETRY_NANOS, WokenPark.nanos(NOW, false, NOW - 1, Long.MAX_VALUE, NOW + 1_000_000_000, MIN));
        assertEquals(WokenPark.RETRY_NANOS, WokenPark.nanos(NOW, false, NOW, Long.MAX_VALUE, NOW + 1_000_000_000, MIN));
        assertEquals(WokenPark.RETRY_NANOS, WokenPark.nanos(NOW, true, Long.MAX_VALUE, Long.MAX_VALUE, NOW + 1_000_000_000, MIN));
        assertEquals(5_000_000, WokenPark.nanos(NOW, true, NOW + 5_000_000, Long.MAX_VALUE, NOW + 1_000_000_000, MIN));
    }

    @Test
    void timesAcrossTheClocksWrapCountFromNow()
    {
        long now = Long.MAX_VALUE - 10_000_000;
        assertEquals(40_000_000, WokenPark.nanos(now, false, now + 40_000_000, Long.MAX_VALUE, now + 1_000_000_000, MIN));
    }
}
