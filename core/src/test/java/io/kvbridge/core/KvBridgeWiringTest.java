package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.KvBridge;
import io.kvbridge.api.PluginInfo;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.BackendResources;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The production wiring, built the way an engine builds it: through the api's builder. */
final class KvBridgeWiringTest
{
    @Test
    void builderFindsTheCoreRuntimeAndSelectsLocal()
    {
        try (KvBridge bridge = KvBridge.builder().transport("auto").agentName("wiring-test").build()) {
            assertEquals("local", bridge.transport().name());
            assertEquals("wiring-test", bridge.transport().agentName());
            assertTrue(bridge.plugins().stream().anyMatch(plugin -> plugin.name().equals("local") && plugin.available()));
            assertEquals(BackendResources.NONE, bridge.transport().resources());
        }
    }

    @Test
    void transportConfigErrorsAreAllReportedWithTheirCode()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> KvBridge.builder().transport("local")
                .transportConfig(Map.of("copy-threads", "0", "simulate-device", "maybe", "colour", "blue")).build());
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertTrue(e.getMessage().contains("copy-threads=0 is outside [1, 64]"), e.getMessage());
        assertTrue(e.getMessage().contains("simulate-device=maybe is not a boolean"), e.getMessage());
        assertTrue(e.getMessage().contains("unknown option colour"), e.getMessage());
    }

    @Test
    void unknownTransportNameSurfacesTheTypedError()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> KvBridge.builder().transport("rdma").build());
        assertEquals(ErrorCode.PLUGIN_UNKNOWN, e.code());
        assertTrue(e.getMessage().contains("local"), e.getMessage());
    }

    @Test
    void closingTheBridgeClosesItsTransport()
    {
        KvBridge bridge = KvBridge.builder().transport("local").build();
        bridge.close();
        assertEquals(BackendResources.NONE, bridge.transport().resources());
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> bridge.transport().localMetadata());
        assertEquals(ErrorCode.CLOSED, e.code());
        for (PluginInfo plugin : bridge.plugins()) {
            assertTrue(plugin.source().length() > 0);
        }
    }
}
