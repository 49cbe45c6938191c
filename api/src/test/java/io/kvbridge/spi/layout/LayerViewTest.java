package io.kvbridge.spi.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

final class LayerViewTest
{
    @Test
    void blocksAreStridedFromTheAddress()
    {
        LayerView view = new LayerView("l", 0x1000, 32, 64, 4);
        assertEquals(0x1000 + 3 * 64, view.blockAddress(3));
        assertEquals(0x1000 + 3 * 64 + 32, view.end());
    }

    @Test
    void viewsThatWouldRunPastTheAddressSpaceAreRejected()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> new LayerView("l", Long.MAX_VALUE - 100, 32, 64, 4));
        assertTrue(e.getMessage().contains("overflows"), e.getMessage());
        assertThrows(KvBridgeException.class, () -> new LayerView("l", 1, 1, Long.MAX_VALUE / 2, 3));
        assertThrows(KvBridgeException.class, () -> new LayerView("", 0x1000, 32, 64, 4));
        new LayerView("l", Long.MAX_VALUE - 64 * 4, 32, 64, 4);
    }
}
