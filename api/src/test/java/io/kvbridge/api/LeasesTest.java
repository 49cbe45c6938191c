package io.kvbridge.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

final class LeasesTest
{
    private static final long SECOND = 1_000_000_000L;

    @Test
    void aConsumerBeatsSixTimesPerLease()
    {
        assertEquals(5 * SECOND, Leases.heartbeatPeriodNanos(30_000));
        assertEquals(1_000_000L, Leases.heartbeatPeriodNanos(6), "the shortest lease a connector accepts beats every millisecond");
        assertEquals(1_000_000L, Leases.heartbeatPeriodNanos(11), "whole milliseconds, rounded down");
    }

    @Test
    void aLeaseShorterThanSixMillisecondsStillBeatsEveryMillisecond()
    {
        assertEquals(1_000_000L, Leases.heartbeatPeriodNanos(1));
        assertEquals(1_000_000L, Leases.heartbeatPeriodNanos(5));
    }

    @Test
    void aPeersHugeLeaseGivesTheLongestPeriodNotAWrappedOne()
    {
        assertEquals(Leases.LONGEST_NANOS, Leases.heartbeatPeriodNanos(Long.MAX_VALUE));
        assertEquals(Leases.LONGEST_NANOS, Leases.heartbeatPeriodNanos(Long.MAX_VALUE / 2));
        long justBelow = (Leases.LONGEST_NANOS / 1_000_000L - 1) * 6;
        assertTrue(Leases.heartbeatPeriodNanos(justBelow) > 0 && Leases.heartbeatPeriodNanos(justBelow) < Leases.LONGEST_NANOS);
    }

    @Test
    void eachHeartbeatExtendsToTwoThirdsOfTheLeaseAndNeverShortens()
    {
        long lease = 30 * SECOND;
        assertEquals(20 * SECOND, Leases.extensionNanos(lease));
        assertEquals(2, Leases.extensionNanos(3));
        assertEquals(1, Leases.extensionNanos(2), "rounded down, as lease x 2 / 3");
        assertEquals(0, Leases.extensionNanos(1));
        // a lease that expired 5 s ago comes back to now + 20 s
        assertEquals(35 * SECOND + 20 * SECOND, Leases.extendedDeadline(30 * SECOND, 35 * SECOND, lease));
        // a deadline already later than now + 20 s stays
        assertEquals(100 * SECOND, Leases.extendedDeadline(100 * SECOND, 35 * SECOND, lease));
        assertEquals(55 * SECOND, Leases.extendedDeadline(55 * SECOND, 35 * SECOND, lease), "equal: unchanged");
    }

    @Test
    void extensionNeitherOverflowsNorMindsWhereTheClockStarts()
    {
        assertEquals(Leases.LONGEST_NANOS / 3 * 2, Leases.extensionNanos(Long.MAX_VALUE), "capped at the longest duration, then two thirds");
        assertTrue(Leases.extensionNanos(Long.MAX_VALUE) > 0, "no overflow into a negative extension");
        long nearWrap = Long.MAX_VALUE - SECOND;
        long extended = Leases.extendedDeadline(nearWrap, nearWrap, 30 * SECOND);
        assertEquals(nearWrap + 20 * SECOND, extended, "the deadline wraps with the clock and is still later");
        assertTrue(extended - nearWrap > 0);
    }

    @Test
    void nonPositiveLeasesAreRefusedNamingTheValue()
    {
        refused(() -> Leases.heartbeatPeriodNanos(0), "leaseMillis=0");
        refused(() -> Leases.heartbeatPeriodNanos(-30_000), "leaseMillis=-30000");
        refused(() -> Leases.extensionNanos(0), "leaseNanos=0");
        refused(() -> Leases.extendedDeadline(0, 0, -1), "leaseNanos=-1");
    }

    private static void refused(Runnable call, String named)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, call::run);
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains(named), e.getMessage());
    }
}
