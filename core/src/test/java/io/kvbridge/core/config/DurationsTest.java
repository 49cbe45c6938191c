package io.kvbridge.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class DurationsTest
{
    @ParameterizedTest
    @CsvSource({"500ms,500000000", "5s,5000000000", "2m,120000000000", "1h,3600000000000", "1.5s,1500000000",
            "0.25ms,250000", "250us,250000", "7ns,7", "1d,86400000000000", "PT5S,5000000000", "pt0.5s,500000000", " 3S ,3000000000", "0s,0"})
    void readsShortAndIsoForms(String text, long nanos)
    {
        assertEquals(Duration.ofNanos(nanos), Durations.parse("--timeout", text));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "5", "s", "-5s", "5 parsecs", "PT-1S", "P", "1.5ns", "PT99999999999999999999S", "5s5"})
    void refusesWithTheAcceptedForms(String text)
    {
        KvBridgeException error = assertThrows(KvBridgeException.class, () -> Durations.parse("--timeout", text));
        assertEquals(ErrorCode.CONFIG_INVALID, error.code());
        assertTrue(error.getMessage().contains("--timeout=" + text) && error.getMessage().contains("500ms"), error.getMessage());
    }

    @Test
    void refusesWhatOverflowsNanosecondsWithoutThrowingArithmetic()
    {
        KvBridgeException error = assertThrows(KvBridgeException.class, () -> Durations.parse("--timeout", "999999999999d"));
        assertTrue(error.getMessage().contains("shorter"), error.getMessage());
        // valid ISO-8601 beyond the nanosecond range still parses; callers bound what they wait for
        assertEquals(Duration.ofSeconds(99999999999L), Durations.parse("--timeout", "PT99999999999S"));
        assertEquals("PT27777777H46M39S", Durations.format(Duration.ofSeconds(99999999999L)));
    }

    @ParameterizedTest
    @CsvSource({"500ms", "5s", "2m", "1h", "1d", "250us", "7ns", "1500ms"})
    void formatsWhatItReads(String text)
    {
        assertEquals(text, Durations.format(Durations.parse("x", text)));
    }
}
