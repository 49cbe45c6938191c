package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.FailurePolicy;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.TransferMode;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A bridge built from a configuration document and an environment, as an engine's launcher would. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class KvBridgeConfigTest
{
    private static final String DOCUMENT = """
            {"kv_connector": "kvbridge", "kv_role": "kv_consumer", "engine_id": "decode-0", "kv_load_failure_policy": "recompute",
             "kv_connector_extra_config": {"transport": "nixl", "agent_name": "from-file", "side_channel_host": "127.0.0.1",
               "kv_lease_duration": 12, "transfer_timeout": "1500ms", "push_registration_timeout": "2m", "modes": ["push"],
               "transports": {"local": {"copy-threads": 3}}, "layout": "per-layer", "layout_options": {"kv-planes": "split"}}}""";

    @Test
    void theDocumentConfiguresTheBridgeAndItsConnectorsAndTheEnvironmentOverridesIt()
    {
        try (Arena arena = Arena.ofConfined();
                KvBridge bridge = KvBridge.builder().config(DOCUMENT).environment(Map.of("KVBRIDGE_TRANSPORT", "local")).build()) {
            assertEquals("local", bridge.transport().name(), "KVBRIDGE_TRANSPORT overrides the document's nixl");
            assertEquals("from-file", bridge.transport().agentName());
            ConnectorSettings settings = bridge.connectorSettings(KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build();
            assertEquals("decode-0", settings.engineId());
            assertEquals(FailurePolicy.RECOMPUTE, settings.failurePolicy());
            assertEquals(Duration.ofSeconds(12), settings.leaseDuration());
            assertEquals(Duration.ofMillis(1500), settings.transferTimeout());
            assertEquals(Duration.ofMinutes(2), settings.registrationTimeout());
            assertEquals(Set.of(TransferMode.PUSH), settings.modes());
            assertEquals("per-layer", settings.layout().name(), "the configured layout describes the geometry");
            assertEquals("per-layer", bridge.configuredLayout().name());

            // kv_consumer: a producer connector is refused, a consumer one starts
            KvBridgeException refused = assertThrows(KvBridgeException.class, () -> bridge.producer(settings));
            assertEquals(ErrorCode.CONFIG_INVALID, refused.code());
            assertTrue(refused.getMessage().contains("engine decode-0 asks for a producer connector but the configuration says kv_role=kv_consumer"),
                    refused.getMessage());
            bridge.consumer(settings).close();
        }
    }

    @Test
    void explicitBuilderCallsOverrideTheEnvironmentAndTheDocument()
    {
        try (KvBridge bridge = KvBridge.builder().config(DOCUMENT).environment(Map.of("KVBRIDGE_TRANSPORT", "nixl", "KVBRIDGE_AGENT_NAME", "from-env"))
                .transport("local").build()) {
            assertEquals("local", bridge.transport().name());
            assertEquals("from-env", bridge.transport().agentName(), "the environment overrides the document");
        }
        try (KvBridge bridge = KvBridge.builder().config(DOCUMENT).environment(Map.of()).transport("local").agentName("explicit").build()) {
            assertEquals("explicit", bridge.transport().agentName());
        }
    }

    @Test
    void theSelectedTransportGetsItsOwnOptionsFromTheDocument()
    {
        // an option the local transport refuses proves the document's options reach it
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> KvBridge.builder().environment(Map.of())
                .config("{\"kv_connector_extra_config\": {\"transport\": \"local\", \"transports\": {\"local\": {\"copy-thread\": 2}, \"ucx\": {\"x\": 1}}}}")
                .build().close());
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertTrue(e.getMessage().contains("copy-thread"), e.getMessage());
        // the builder's own options override the document's for the selected transport
        try (KvBridge bridge = KvBridge.builder().environment(Map.of()).transport("local").transportConfig(Map.of("copy-threads", "1"))
                .config("{\"kv_connector_extra_config\": {\"transports\": {\"local\": {\"copy-threads\": \"none\"}}}}").build()) {
            assertEquals("local", bridge.transport().name());
        }
    }

    @Test
    void aBridgeIsNotBuiltFromAnInvalidConfigurationAndEveryProblemIsNamed()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> KvBridge.builder().transport("local")
                .config("{\"kv_role\": \"prefill\", \"kv_connector_extra_config\": {\"side_channel_prot\": 1}}")
                .environment(Map.of("KVBRIDGE_TRANSPRT", "local")).build().close());
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertTrue(e.getMessage().startsWith("KVB/ConfigInvalid: configuration is invalid (3 problems): "), e.getMessage());
        assertTrue(e.getMessage().contains("kv_role=prefill is not a role"), e.getMessage());
        assertTrue(e.getMessage().contains("side_channel_prot is not a known key (did you mean side_channel_port?)"), e.getMessage());
        assertTrue(e.getMessage().contains("unknown environment variable KVBRIDGE_TRANSPRT (did you mean KVBRIDGE_TRANSPORT?)"), e.getMessage());
        // without any configuration nothing changes: no role, and no engine id to start settings from
        try (Arena arena = Arena.ofConfined(); KvBridge bridge = KvBridge.builder().transport("local").environment(Map.of()).build()) {
            bridge.producer(ConnectorSettings.builder("p", KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build())
                    .prefillFinished("r", BlockIds.of(new int[] {1}));
            KvBridgeException noId = assertThrows(KvBridgeException.class,
                    () -> bridge.connectorSettings(KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))));
            assertTrue(noId.getMessage().contains("the configuration gives no engine_id"), noId.getMessage());
            assertSame(ErrorCode.CONFIG_INVALID, assertThrows(KvBridgeException.class, bridge::configuredLayout).code());
        }
    }
}
