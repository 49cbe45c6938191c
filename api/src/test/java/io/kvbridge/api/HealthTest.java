package io.kvbridge.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.Health.Check;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.List;
import org.junit.jupiter.api.Test;

final class HealthTest
{
    @Test
    void healthyOnlyWhenEveryCheckPassed()
    {
        Health good = Health.of(List.of(Check.passed("transport", "no problem reported"), Check.passed("side channel p", "answered")));
        assertTrue(good.healthy());
        assertEquals(List.of(), good.problems());

        Health bad = Health.of(List.of(Check.passed("transport", "no problem reported"), Check.failed("side channel p", "no answer")));
        assertFalse(bad.healthy());
        assertEquals(List.of("side channel p: no answer"), bad.problems());
    }

    @Test
    void aReportThatContradictsItsChecksIsRefused()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> new Health(true, List.of(Check.failed("transport", "closed"))));
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains("healthy=true but 1 of 1 checks failed"), e.getMessage());
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(KvBridgeException.class, () -> Health.of(List.of())).code());
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(KvBridgeException.class, () -> Check.passed(" ", "x")).code());
    }
}
