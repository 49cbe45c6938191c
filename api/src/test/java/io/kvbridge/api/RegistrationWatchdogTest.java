package io.kvbridge.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

final class RegistrationWatchdogTest
{
    private static final long SECOND = 1_000_000_000L;

    @Test
    void theWatchdogFiresRegistrationTimeoutAfterTheRegistration()
    {
        assertEquals(7 + 60 * SECOND, RegistrationWatchdog.deadlineNanos(7, Duration.ofSeconds(60)));
        assertEquals(-SECOND + 1, RegistrationWatchdog.deadlineNanos(-SECOND, Duration.ofNanos(1)), "the clock may start anywhere");
        long deadline = RegistrationWatchdog.deadlineNanos(0, Duration.ofMillis(10));
        assertTrue(!RegistrationWatchdog.expired(deadline - 1, deadline));
        assertTrue(RegistrationWatchdog.expired(deadline, deadline), "expired from the deadline on");
        long nearWrap = Long.MAX_VALUE - 5;
        long wrapped = RegistrationWatchdog.deadlineNanos(nearWrap, Duration.ofNanos(10));
        assertTrue(!RegistrationWatchdog.expired(nearWrap + 9, wrapped) && RegistrationWatchdog.expired(nearWrap + 10, wrapped), "compared by difference");
    }

    @Test
    void aTimeoutBeyondWhatNanosecondsHoldIsCappedNotThrown()
    {
        assertEquals(Leases.LONGEST_NANOS, RegistrationWatchdog.deadlineNanos(0, Duration.ofSeconds(Long.MAX_VALUE)));
        assertEquals(Leases.LONGEST_NANOS, RegistrationWatchdog.deadlineNanos(0, Duration.ofNanos(Leases.LONGEST_NANOS)));
        assertTrue(!RegistrationWatchdog.expired(0, RegistrationWatchdog.deadlineNanos(0, Duration.ofSeconds(Long.MAX_VALUE))));
    }

    @Test
    void theWatchdogRefusesATimeoutThatIsNotPositive()
    {
        refused(() -> RegistrationWatchdog.deadlineNanos(0, Duration.ZERO), "registrationTimeout=PT0S");
        refused(() -> RegistrationWatchdog.deadlineNanos(0, Duration.ofSeconds(-5)), "registrationTimeout=PT-5S");
        assertThrows(NullPointerException.class, () -> RegistrationWatchdog.deadlineNanos(0, null));
    }

    private static void refused(Runnable call, String named)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, call::run);
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains(named), e.getMessage());
    }
}
