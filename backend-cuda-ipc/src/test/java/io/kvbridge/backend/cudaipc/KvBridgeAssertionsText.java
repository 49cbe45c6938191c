package io.kvbridge.backend.cudaipc;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.KvBridgeException;

final class KvBridgeAssertionsText
{
    private KvBridgeAssertionsText()
    {
    }

    static void assertMessage(KvBridgeException e, String fragment)
    {
        assertTrue(e.getMessage().contains(fragment), () -> "expected '" + fragment + "' in: " + e.getMessage());
    }
}
