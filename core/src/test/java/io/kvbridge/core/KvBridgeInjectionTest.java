package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.mockito.ArgumentMatchers.eq;
import static org.mockito.Mockito.spy;
import static org.mockito.Mockito.times;
import static org.mockito.Mockito.verify;

import com.google.inject.Injector;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.core.engine.EngineServices;
import io.kvbridge.core.engine.RankTransports;
import io.kvbridge.core.engine.SummarySchedule;
import io.kvbridge.core.layout.PerLayerCacheLayoutFactory;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.plugin.DiscoveredTransport;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.core.sidechannel.ManualClock;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.mockito.ArgumentCaptor;

/** What the bridge's injector builds from its bindings, and from which one transport selection. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class KvBridgeInjectionTest
{
    @Test
    void theTransportIsSelectedOnceAndTheBridgeAndEveryRankCreateTheirInstancesFromIt()
    {
        // a spy: the real local transport, with its plugin calls counted
        TransferBackendFactory local = spy(new LocalBackendFactory());
        PluginRegistry plugins = new PluginRegistry(List.of(local), List.of(new PerLayerCacheLayoutFactory()));
        Injector injector = CoreKvBridgeRuntime.injector(new BridgeSettings("auto", "selected", Map.of(), new byte[0], Duration.ZERO), plugins,
                EmbedderServices.defaults());
        DiscoveredTransport selected = injector.getInstance(DiscoveredTransport.class);
        assertSame(plugins.transports().get("local"), selected);
        assertSame(selected, injector.getInstance(DiscoveredTransport.class), "one selection per bridge");
        assertSame(local, injector.getInstance(RankTransports.class).factory(), "the ranks create from the selected factory");

        try (Arena arena = Arena.ofConfined(); CoreKvBridge bridge = injector.getInstance(CoreKvBridge.class)) {
            assertSame(injector.getInstance(TransferBackend.class), bridge.transport());
            bridge.producer(ConnectorSettings.builder("prefill", KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).build());
            bridge.consumer(ConnectorSettings.builder("decode", KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64))).sideChannel("localhost", 0).build());

            verify(local, times(1)).probe();
            ArgumentCaptor<BackendContext> contexts = ArgumentCaptor.forClass(BackendContext.class);
            verify(local, times(3)).create(eq(Map.of()), contexts.capture());
            assertEquals(List.of("selected", "selected-producer-pp0-tp0-1", "selected-consumer-pp0-tp0-2"),
                    contexts.getAllValues().stream().map(BackendContext::agentName).toList());
            // each instance learns its side channel's bind address, so that transports with listeners keep to its interface
            assertEquals(List.of(Optional.of("127.0.0.1"), Optional.of("127.0.0.1"), Optional.of("localhost")),
                    contexts.getAllValues().stream().map(BackendContext::sideChannelHost).toList());
        }
    }

    @Test
    void theEnginesClockRegistryAndSummaryIntervalAreTheOnesBound()
    {
        ManualClock clock = new ManualClock();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        PluginRegistry plugins = new PluginRegistry(List.of(new LocalBackendFactory()), List.of(new PerLayerCacheLayoutFactory()));
        Injector injector = CoreKvBridgeRuntime.injector(new BridgeSettings("local", "bound", Map.of(), new byte[0], Duration.ofMinutes(3)), plugins,
                new EmbedderServices(clock, Optional.of(registry)));
        try (CoreKvBridge bridge = injector.getInstance(CoreKvBridge.class)) {
            assertSame(clock, injector.getInstance(SideChannelClock.class));
            assertSame(registry, injector.getInstance(MeterRegistry.class));
            assertSame(registry, injector.getInstance(EngineServices.class).registry());
            assertSame(registry, bridge.metricsRegistry(MeterRegistry.class));
            assertEquals(Duration.ofMinutes(3), injector.getInstance(SummarySchedule.class).interval());
            assertSame(injector.getInstance(EngineServices.class), injector.getInstance(EngineServices.class));
        }
    }
}
