package io.kvbridge.core;

import static java.util.Objects.requireNonNull;

import com.google.inject.Inject;
import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.Health;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.PluginInfo;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.core.config.BridgeConfig;
import io.kvbridge.core.engine.ConnectorFactory;
import io.kvbridge.core.engine.EngineServices;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.spi.transfer.TransferBackend;
import io.micrometer.core.instrument.Gauge;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/** The bridge the core builds: plugins, one transport instance, layouts by name, and the connectors' shared services. */
final class CoreKvBridge implements KvBridge
{
    // long enough for a worker round and a loopback round trip on a loaded host, short enough for a scrape
    static final Duration HEALTH_PROBE_TIMEOUT = Duration.ofSeconds(1);
    static final String HEALTH_GAUGE = "kvbridge.health";

    private final PluginRegistry registry;
    private final TransferBackend transport;
    private final EngineServices engine;
    private final ConnectorFactory connectors;
    private final Gauge healthGauge;
    // whether close() takes the gauge out of the registry: only from the engine's registry, and only
    // the gauge this bridge registered (a second bridge on that registry is handed the first's)
    private final boolean removeGaugeOnClose;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final BridgeConfig config;

    @Inject
    CoreKvBridge(PluginRegistry registry, TransferBackend transport, EngineServices engine, ConnectorFactory connectors, EmbedderServices embedder,
            BridgeSettings settings)
    {
        this.config = settings.config();
        this.registry = requireNonNull(registry, "registry is null");
        this.transport = requireNonNull(transport, "transport is null");
        this.engine = requireNonNull(engine, "engine is null");
        this.connectors = requireNonNull(connectors, "connectors is null");
        boolean firstGauge = engine.registry().find(HEALTH_GAUGE).gauge() == null;
        this.removeGaugeOnClose = embedder.meterRegistry().isPresent() && firstGauge;
        // probed at each read, so a scrape sees the state at that moment
        this.healthGauge = Gauge.builder(HEALTH_GAUGE, this, bridge -> bridge.health().healthy() ? 1 : 0)
                .description("1 when every check of KvBridge.health() passes, else 0")
                .strongReference(true)
                .register(engine.registry());
    }

    @Override
    public List<PluginInfo> plugins()
    {
        return registry.describe();
    }

    @Override
    public TransferBackend transport()
    {
        return transport;
    }

    @Override
    public CacheLayout layout(String name, Map<String, String> config)
    {
        return registry.layout(name).create(config);
    }

    @Override
    public ProducerConnector producer(ConnectorSettings settings)
    {
        checkRole(config.role() == null || config.role().produces(), "producer", settings);
        return connectors.producer(withRegisteredLayout(settings));
    }

    @Override
    public ConsumerConnector consumer(ConnectorSettings settings)
    {
        checkRole(config.role() == null || config.role().consumes(), "consumer", settings);
        return connectors.consumer(withRegisteredLayout(settings));
    }

    private void checkRole(boolean allowed, String kind, ConnectorSettings settings)
    {
        KvBridgeException.check(allowed, ErrorCode.CONFIG_INVALID, "engine %s asks for a %s connector but the configuration says kv_role=%s"
                + " (expected: kv_both for an engine that runs both kinds)", settings.engineId(), kind, config.role() == null ? null : config.role().configName());
    }

    @Override
    public ConnectorSettings.Builder connectorSettings(CacheGeometry geometry)
    {
        requireNonNull(geometry, "geometry is null");
        KvBridgeException.check(config.engineId() != null, ErrorCode.CONFIG_INVALID,
                "the configuration gives no engine_id (set it in the document or KVBRIDGE_ENGINE_ID, or use ConnectorSettings.builder(engineId, geometry))");
        ConnectorSettings.Builder builder = ConnectorSettings.builder(config.engineId(), geometry);
        if (config.sideChannelHost() != null || config.sideChannelPort() != null) {
            builder.sideChannel(config.sideChannelHost() != null ? config.sideChannelHost() : ConnectorSettings.DEFAULT_BIND_HOST,
                    config.sideChannelPort() != null ? config.sideChannelPort() : 0);
        }
        if (config.advertisedHost() != null) {
            builder.advertisedHost(config.advertisedHost());
        }
        if (config.modes() != null) {
            builder.modes(config.modes());
        }
        if (config.leaseDuration() != null) {
            builder.leaseDuration(config.leaseDuration());
        }
        if (config.transferTimeout() != null) {
            builder.transferTimeout(config.transferTimeout());
        }
        if (config.registrationTimeout() != null) {
            builder.registrationTimeout(config.registrationTimeout());
        }
        if (config.failurePolicy() != null) {
            builder.failurePolicy(config.failurePolicy());
        }
        if (config.integrity() != null) {
            builder.integrity(config.integrity());
        }
        if (config.layout() != null && config.layout().equals(geometry.layoutName())) {
            builder.layout(configuredLayout());
        }
        return builder;
    }

    @Override
    public CacheLayout configuredLayout()
    {
        KvBridgeException.check(config.layout() != null, ErrorCode.CONFIG_INVALID,
                "the configuration names no layout (set kv_connector_extra_config.layout or KVBRIDGE_LAYOUT, or call layout(name, options))");
        return layout(config.layout(), config.layoutOptions());
    }

    /** The embedder need not pass the layout: the one registered under the geometry's layout name answers with its default options. */
    private ConnectorSettings withRegisteredLayout(ConnectorSettings settings)
    {
        CacheLayoutFactory factory = settings.layout() == null ? registry.layouts().get(settings.geometry().layoutName()) : null;
        return factory == null ? settings : settings.withLayout(factory.create(Map.of()));
    }

    @Override
    public ConnectorAudit audit()
    {
        return engine.audit();
    }

    @Override
    public Health health()
    {
        if (closed.get()) {
            return Health.of(List.of(Health.Check.failed("bridge", "the bridge is closed: its transport, connectors and side channels are gone;"
                    + " build a new one with KvBridge.builder()")));
        }
        return Health.of(engine.health(transport, HEALTH_PROBE_TIMEOUT));
    }

    @Override
    public <T> T metricsRegistry(Class<T> type)
    {
        requireNonNull(type, "type is null");
        if (!type.isInstance(engine.registry())) {
            throw new KvBridgeException(ErrorCode.UNSUPPORTED, "the metrics registry is a " + engine.registry().getClass().getName()
                    + ", not a " + type.getName() + " (ask for io.micrometer.core.instrument.MeterRegistry)");
        }
        return type.cast(engine.registry());
    }

    @Override
    public void close()
    {
        closed.set(true);
        engine.close();
        transport.close();
        // the bridge's own registry goes on reporting it as closed; the engine's registry outlives
        // the bridge, so the gauge leaves it rather than holding on to a closed bridge
        if (removeGaugeOnClose) {
            engine.registry().remove(healthGauge);
        }
    }
}
