package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.Integrity;
import io.kvbridge.api.KvBridge;
import io.kvbridge.core.config.Configuration;
import java.lang.foreign.Arena;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The integrity setting from the document and the environment into a rank's settings. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class IntegrityConfigTest
{
    @Test
    void theDocumentAndTheEnvironmentSetIntegrityAndTheSettingsCarryIt()
    {
        String document = """
                {"engine_id": "decode-0", "kv_connector_extra_config": {"transport": "local", "integrity": "crc32c"}}""";
        try (Arena arena = Arena.ofConfined();
                KvBridge bridge = KvBridge.builder().config(document).environment(Map.of()).build()) {
            assertEquals(Integrity.CRC32C, bridge.connectorSettings(KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build().integrity());
        }
        try (Arena arena = Arena.ofConfined();
                KvBridge bridge = KvBridge.builder().config(document).environment(Map.of("KVBRIDGE_INTEGRITY", "off")).build()) {
            assertEquals(Integrity.OFF, bridge.connectorSettings(KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build().integrity(),
                    "the environment overrides the document");
        }
        try (Arena arena = Arena.ofConfined();
                KvBridge bridge = KvBridge.builder().config("{\"engine_id\": \"e\"}").environment(Map.of()).build()) {
            assertEquals(Integrity.OFF, bridge.connectorSettings(KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build().integrity(),
                    "off by default");
        }
    }

    @Test
    void anUnknownSettingNamesTheChoices()
    {
        assertEquals(List.of("kv_connector_extra_config.integrity=sha1 is not an integrity setting (expected: off or crc32c)"),
                Configuration.resolve("{\"kv_connector_extra_config\": {\"integrity\": \"sha1\"}}", null, Map.of()).problems());
        assertEquals(List.of("KVBRIDGE_INTEGRITY=on is not an integrity setting (expected: off or crc32c)"),
                Configuration.resolve(null, null, Map.of("KVBRIDGE_INTEGRITY", "on")).problems());
    }
}
