package io.kvbridge.engine.jlama.serve;

import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An engine JVM's deadlines outlast the longest prefill it was started for, and keep their defaults otherwise. */
class PrefillDeadlinesTest
{
    @AfterEach
    void clear()
    {
        System.clearProperty(PrefillDeadlines.PROPERTY);
    }

    @Test
    void withoutThePropertyTheDecoderWaits60Seconds()
    {
        assertEquals(Duration.ZERO, PrefillDeadlines.longestPrefill());
        assertEquals(TimeUnit.SECONDS.toNanos(60), PrefillDeadlines.receiveNanos());
    }

    @Test
    void aLongPrefillStretchesTheWaitPastIt()
    {
        System.setProperty(PrefillDeadlines.PROPERTY, "600");
        assertEquals(Duration.ofSeconds(600), PrefillDeadlines.longestPrefill());
        assertEquals(TimeUnit.SECONDS.toNanos(720), PrefillDeadlines.receiveNanos());
    }

    @Test
    void aValueThatIsNoPositiveNumberIsRefusedNamingTheProperty()
    {
        System.setProperty(PrefillDeadlines.PROPERTY, "ten");
        KvBridgeException refused = assertThrows(KvBridgeException.class, PrefillDeadlines::longestPrefill);
        assertTrue(refused.getMessage().contains(PrefillDeadlines.PROPERTY + "=ten"), refused.getMessage());
    }
}
