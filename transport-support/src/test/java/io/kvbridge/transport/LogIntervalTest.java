package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

final class LogIntervalTest
{
    @Test
    void dueFirstThenOncePerInterval()
    {
        LogInterval interval = new LogInterval(10);
        // any clock value, zero and negative included, makes the first line due
        assertTrue(interval.due(-5));
        assertFalse(interval.due(0));
        assertFalse(interval.due(5));
        assertTrue(interval.due(6));
        assertFalse(interval.due(16));
        assertTrue(interval.due(17));
        assertThrows(IllegalArgumentException.class, () -> new LogInterval(0));
    }
}
