package io.kvbridge.core;

import static java.util.Objects.requireNonNull;

import com.google.inject.AbstractModule;
import com.google.inject.Provides;
import com.google.inject.Scopes;
import com.google.inject.Singleton;
import io.kvbridge.core.engine.EngineServices;
import io.kvbridge.core.plugin.DiscoveredTransport;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.TransferBackend;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The bindings of one bridge. Explicit bindings only; no circular proxies. */
final class KvBridgeModule extends AbstractModule
{
    private static final Logger LOG = LoggerFactory.getLogger(KvBridgeModule.class);

    private final BridgeSettings settings;
    private final PluginRegistry registry;

    KvBridgeModule(BridgeSettings settings, PluginRegistry registry)
    {
        this.settings = requireNonNull(settings, "settings is null");
        this.registry = requireNonNull(registry, "registry is null");
    }

    @Override
    protected void configure()
    {
        binder().requireExplicitBindings();
        binder().disableCircularProxies();
        bind(BridgeSettings.class).toInstance(settings);
        bind(PluginRegistry.class).toInstance(registry);
        bind(CoreKvBridge.class).in(Scopes.SINGLETON);
    }

    @Provides
    @Singleton
    TransferBackend transport(PluginRegistry plugins, BridgeSettings bridgeSettings)
    {
        DiscoveredTransport selected = plugins.selectTransport(bridgeSettings.transport());
        BackendContext context = bridgeSettings::agentName;
        TransferBackend transport = selected.factory().create(bridgeSettings.transportConfig(), context);
        LOG.info("kvbridge {}; selected transport {}{} as agent {}", plugins.summary(), selected.name(),
                bridgeSettings.transport().equals("auto") ? " (auto)" : "", bridgeSettings.agentName());
        return transport;
    }

    @Provides
    @Singleton
    EngineServices engineServices(PluginRegistry plugins, BridgeSettings bridgeSettings)
    {
        DiscoveredTransport selected = plugins.selectTransport(bridgeSettings.transport());
        CompositeMeterRegistry registry = new CompositeMeterRegistry();
        registry.add(new SimpleMeterRegistry());
        return new EngineServices(selected.factory(), bridgeSettings.transportConfig(), bridgeSettings.agentName(), SideChannelClock.system(),
                SideChannelSettings.builder().secret(bridgeSettings.sideChannelSecret()).build(), registry, Duration.ofSeconds(10));
    }
}
