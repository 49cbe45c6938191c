package io.kvbridge.core;

import static java.util.Objects.requireNonNull;

import com.google.inject.Inject;
import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.PluginInfo;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.core.engine.EngineServices;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.List;
import java.util.Map;

/** The bridge the core builds: plugins, one transport instance, layouts by name, and the connectors' shared services. */
final class CoreKvBridge implements KvBridge
{
    private final PluginRegistry registry;
    private final TransferBackend transport;
    private final EngineServices engine;

    @Inject
    CoreKvBridge(PluginRegistry registry, TransferBackend transport, EngineServices engine)
    {
        this.registry = requireNonNull(registry, "registry is null");
        this.transport = requireNonNull(transport, "transport is null");
        this.engine = requireNonNull(engine, "engine is null");
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
        return engine.producer(settings);
    }

    @Override
    public ConsumerConnector consumer(ConnectorSettings settings)
    {
        return engine.consumer(settings);
    }

    @Override
    public ConnectorAudit audit()
    {
        return engine.audit();
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
        engine.close();
        transport.close();
    }
}
