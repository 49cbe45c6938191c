package io.kvbridge.core;

import static java.util.Objects.requireNonNull;

import com.google.inject.Inject;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.PluginInfo;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.List;
import java.util.Map;

/** The bridge the core builds: plugins, one transport instance, layouts by name. */
final class CoreKvBridge implements KvBridge
{
    private final PluginRegistry registry;
    private final TransferBackend transport;

    @Inject
    CoreKvBridge(PluginRegistry registry, TransferBackend transport)
    {
        this.registry = requireNonNull(registry, "registry is null");
        this.transport = requireNonNull(transport, "transport is null");
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
    public void close()
    {
        transport.close();
    }
}
