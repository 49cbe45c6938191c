package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.Health;
import io.kvbridge.api.KvBridge;
import io.kvbridge.core.layout.PerLayerCacheLayoutFactory;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.testkit.FaultInjectingBackendFactory;
import io.kvbridge.testkit.FaultInjectingTransferBackend;
import io.kvbridge.testkit.FaultPlan;
import io.micrometer.core.instrument.MeterRegistry;
import java.lang.foreign.Arena;
import java.security.SecureRandom;
import java.util.List;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link KvBridge#health()} and its gauge, on bridges built the way an engine builds them. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class KvBridgeHealthTest
{
    private static double gauge(KvBridge bridge)
    {
        return bridge.metricsRegistry(MeterRegistry.class).get("kvbridge.health").gauge().value();
    }

    @Test
    void aBridgeWithWorkingConnectorsIsHealthy()
    {
        try (Arena arena = Arena.ofConfined(); KvBridge bridge = KvBridge.builder().transport("local").build()) {
            bridge.producer(ConnectorSettings.builder("prefill", KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build());
            bridge.consumer(ConnectorSettings.builder("decode", KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build());

            Health health = bridge.health();
            assertTrue(health.healthy(), health.problems()::toString);
            assertEquals(List.of("transport", "consumer decode pp0/1:tp0/1", "producer prefill pp0/1:tp0/1", "side channel decode", "side channel prefill"),
                    health.checks().stream().map(Health.Check::name).toList());
            assertEquals(1.0, gauge(bridge));
        }
    }

    @Test
    void authenticatedSideChannelsAreProbedWithTheBridgesSecret()
    {
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        try (Arena arena = Arena.ofConfined(); KvBridge bridge = KvBridge.builder().transport("local").sideChannelSecret(secret).build()) {
            bridge.producer(ConnectorSettings.builder("prefill", KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build());

            Health health = bridge.health();
            assertTrue(health.healthy(), health.problems()::toString);
            assertTrue(health.checks().getLast().detail().startsWith("answered the request for rank pp0:tp0 at 127.0.0.1:"), health::toString);
        }
    }

    @Test
    void aTransportReportingAProblemMakesTheBridgeUnhealthy()
    {
        FaultInjectingBackendFactory faults = new FaultInjectingBackendFactory(new LocalBackendFactory(), FaultPlan.none(1));
        PluginRegistry plugins = new PluginRegistry(List.of(faults), List.of(new PerLayerCacheLayoutFactory()));
        BridgeSettings settings = new BridgeSettings("local", "health", Map.of(), new byte[0], Duration.ZERO);
        try (Arena arena = Arena.ofConfined(); KvBridge bridge = CoreKvBridgeRuntime.start(settings, plugins, EmbedderServices.defaults())) {
            bridge.producer(ConnectorSettings.builder("prefill", KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build());
            assertTrue(bridge.health().healthy(), bridge.health().problems()::toString);

            FaultInjectingTransferBackend producerTransport = faults.created().stream().filter(t -> t.agentName().contains("-producer-")).findFirst()
                    .orElseThrow();
            producerTransport.injectProblem("owner thread died");
            Health health = bridge.health();
            assertFalse(health.healthy());
            assertEquals(List.of("producer prefill pp0/1:tp0/1: transport: injected: owner thread died"), health.problems());
            assertEquals(0.0, gauge(bridge));

            producerTransport.injectProblem(null);
            faults.created().getFirst().injectProblem("worker failed");
            assertEquals(List.of("transport: injected: worker failed"), bridge.health().problems());
        }
    }

    @Test
    void aClosedBridgeIsUnhealthyWithOneCheckSayingSo()
    {
        KvBridge bridge = KvBridge.builder().transport("local").build();
        assertTrue(bridge.health().healthy(), bridge.health().problems()::toString);
        bridge.close();

        Health health = bridge.health();
        assertFalse(health.healthy());
        assertEquals(1, health.checks().size());
        assertEquals("bridge", health.checks().getFirst().name());
        assertTrue(health.problems().getFirst().contains("the bridge is closed"), health::toString);
        assertEquals(0.0, gauge(bridge));
    }
}
