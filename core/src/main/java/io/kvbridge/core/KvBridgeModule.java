package io.kvbridge.core;

import static java.util.Objects.requireNonNull;

import com.google.inject.AbstractModule;
import com.google.inject.Provides;
import com.google.inject.Scopes;
import com.google.inject.Singleton;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.core.discovery.Discovery;
import io.kvbridge.core.engine.ConnectorFactory;
import io.kvbridge.core.engine.EngineBackendContext;
import io.kvbridge.core.engine.EngineServices;
import io.kvbridge.core.engine.RankTransports;
import io.kvbridge.core.engine.SummarySchedule;
import io.kvbridge.core.plugin.DiscoveredTransport;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.spi.discovery.DirectoryConfig;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.TransferBackend;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bindings of one bridge. Explicit bindings only; no circular proxies. The transport is
 * selected once, by {@link #selectedTransport}: the bridge's own instance and every connector's
 * come from that one binding.
 */
final class KvBridgeModule extends AbstractModule
{
    private static final Logger LOG = LoggerFactory.getLogger(KvBridgeModule.class);

    private final BridgeSettings settings;
    private final PluginRegistry registry;
    private final EmbedderServices embedder;

    KvBridgeModule(BridgeSettings settings, PluginRegistry registry, EmbedderServices embedder)
    {
        this.settings = requireNonNull(settings, "settings is null");
        this.registry = requireNonNull(registry, "registry is null");
        this.embedder = requireNonNull(embedder, "embedder is null");
    }

    @Override
    protected void configure()
    {
        binder().requireExplicitBindings();
        binder().disableCircularProxies();
        bind(BridgeSettings.class).toInstance(settings);
        bind(PluginRegistry.class).toInstance(registry);
        bind(EmbedderServices.class).toInstance(embedder);
        bind(SideChannelClock.class).toInstance(embedder.clock());
        bind(EngineServices.class).in(Scopes.SINGLETON);
        bind(ConnectorFactory.class).in(Scopes.SINGLETON);
        bind(CoreKvBridge.class).in(Scopes.SINGLETON);
    }

    @Provides
    @Singleton
    DiscoveredTransport selectedTransport(PluginRegistry plugins, BridgeSettings bridgeSettings)
    {
        DiscoveredTransport selected = plugins.selectTransport(bridgeSettings.transport());
        LOG.info("kvbridge {}; selected transport {}{} as agent {}", plugins.summary(), selected.name(),
                bridgeSettings.transport().equals("auto") ? " (auto)" : "", bridgeSettings.agentName());
        return selected;
    }

    @Provides
    @Singleton
    TransferBackend transport(DiscoveredTransport selected, BridgeSettings bridgeSettings)
    {
        // the bridge's own instance follows the side channel its connectors bind by default
        String host = bridgeSettings.config().sideChannelHost();
        BackendContext context = EngineBackendContext.of(bridgeSettings.agentName(), host == null ? ConnectorSettings.DEFAULT_BIND_HOST : host,
                bridgeSettings.sideChannelSecret(), selected.name());
        return selected.factory().create(bridgeSettings.transportConfig(selected.name()), context);
    }

    @Provides
    @Singleton
    RankTransports rankTransports(DiscoveredTransport selected, BridgeSettings bridgeSettings)
    {
        return new RankTransports(selected.factory(), bridgeSettings.transportConfig(selected.name()), bridgeSettings.agentName(),
                bridgeSettings.sideChannelSecret());
    }

    @Provides
    @Singleton
    SideChannelSettings sideChannelSettings(BridgeSettings bridgeSettings)
    {
        return SideChannelSettings.builder().secret(bridgeSettings.sideChannelSecret()).tls(bridgeSettings.sideChannelTls())
                .allowUnauthenticated(bridgeSettings.allowUnauthenticated()).build();
    }

    @Provides
    @Singleton
    Discovery discovery(BridgeSettings bridgeSettings, SideChannelSettings sideChannelSettings, PluginRegistry plugins)
    {
        String location = bridgeSettings.config().discovery();
        if (location == null) {
            return Discovery.NONE;
        }
        DirectoryConfig config = DirectoryConfig.parse(location);
        Duration leaseTtl = bridgeSettings.config().discoveryLeaseTtl();
        if (leaseTtl != null) {
            config = config.with(leaseTtl, config.requestTimeout(), config.maxEntryBytes());
        }
        LOG.info("discovery through {} (lease {})", config.location(), config.leaseTtl());
        return new Discovery(plugins.directory(config.scheme()).open(config), sideChannelSettings.limits(),
                sideChannelSettings.secret());
    }

    @Provides
    @Singleton
    MeterRegistry meterRegistry(EmbedderServices services)
    {
        // bound before any meter exists, so the embedder's registry sees every meter from the first;
        // an own registry is a composite, so that an engine can add its registries to it later
        return services.meterRegistry().orElseGet(() -> {
            CompositeMeterRegistry own = new CompositeMeterRegistry();
            own.add(new SimpleMeterRegistry());
            return own;
        });
    }

    @Provides
    @Singleton
    SummarySchedule summarySchedule(BridgeSettings bridgeSettings)
    {
        return SummarySchedule.onOwnThread(bridgeSettings.summaryInterval());
    }
}
