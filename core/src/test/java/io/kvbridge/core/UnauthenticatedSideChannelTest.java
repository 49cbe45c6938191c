package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A side channel that proves nothing about its peers lets whoever reaches it read the geometry and
 * free held requests with forged completions: an engine serves one on an address other hosts reach
 * only when told to by name, and on loopback as before.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class UnauthenticatedSideChannelTest
{
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private static ProducerConnector producerOn(KvBridge bridge, MemorySegment memory, String host)
    {
        return bridge.producer(ConnectorSettings.builder("prefill", KvBridgeConnectorsTest.geometry(memory)).sideChannel(host, 0).build());
    }

    @Test
    void anEngineOnEveryAddressWithoutSecretOrTlsRefusesToStartInOneLine()
    {
        try (Arena arena = Arena.ofConfined(); KvBridge bridge = KvBridge.builder().transport("local").environment(Map.of()).build()) {
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> producerOn(bridge, arena.allocate(2048, 64), "0.0.0.0"));
            assertEquals(ErrorCode.CONFIG_INVALID, e.code());
            assertTrue(e.getMessage().startsWith("KVB/ConfigInvalid: engine prefill would serve its side channel on 0.0.0.0 (not loopback) without"
                    + " authenticating its peers"), e.getMessage());
            assertTrue(e.getMessage().contains("side_channel_allow_unauthenticated=true"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
            assertTrue(bridge.audit().idle(), () -> "nothing was left running: " + bridge.audit());
        }
    }

    @Test
    void itStartsWhenToldExplicitlyByTheBuilderOrTheDocument()
    {
        try (Arena arena = Arena.ofConfined();
                KvBridge byBuilder = KvBridge.builder().transport("local").environment(Map.of()).allowUnauthenticatedSideChannel(true).build();
                KvBridge byDocument = KvBridge.builder().transport("local").environment(Map.of())
                        .config("{\"kv_connector_extra_config\": {\"side_channel_allow_unauthenticated\": true}}").build();
                KvBridge byEnvironment = KvBridge.builder().transport("local")
                        .environment(Map.of("KVBRIDGE_SIDE_CHANNEL_ALLOW_UNAUTHENTICATED", "true")).build()) {
            for (KvBridge bridge : new KvBridge[] {byBuilder, byDocument, byEnvironment}) {
                try (ProducerConnector producer = producerOn(bridge, arena.allocate(2048, 64), "0.0.0.0")) {
                    assertEquals(0, producer.audit().leasesHeld());
                }
            }
        }
    }

    @Test
    void aSecretOrLoopbackNeedsNoPermission()
    {
        try (Arena arena = Arena.ofConfined();
                KvBridge authenticated = KvBridge.builder().transport("local").environment(Map.of()).sideChannelSecret(SECRET).build();
                KvBridge local = KvBridge.builder().transport("local").environment(Map.of()).build()) {
            try (ProducerConnector producer = producerOn(authenticated, arena.allocate(2048, 64), "0.0.0.0")) {
                assertEquals(0, producer.audit().leasesHeld());
            }
            try (ProducerConnector producer = producerOn(local, arena.allocate(2048, 64), "127.0.0.1")) {
                assertEquals(0, producer.audit().leasesHeld());
            }
        }
    }
}
