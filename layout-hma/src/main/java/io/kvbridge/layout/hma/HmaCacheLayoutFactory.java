package io.kvbridge.layout.hma;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import java.util.Map;

/** Creates the {@code hma} layout. It has no options; any option given is rejected. */
public final class HmaCacheLayoutFactory implements CacheLayoutFactory
{
    /** Creates the factory; {@link java.util.ServiceLoader} finds it through the module's {@code provides}. */
    public HmaCacheLayoutFactory()
    {
    }

    @Override
    public String name()
    {
        return HmaCacheLayout.NAME;
    }

    @Override
    public int spiVersion()
    {
        return Spi.VERSION;
    }

    @Override
    public CacheLayout create(Map<String, String> config)
    {
        new PluginConfig(name(), requireNonNull(config, "config is null")).finish();
        return new HmaCacheLayout();
    }

    @Override
    public String description()
    {
        return "hybrid allocator pools: layer i of every full-attention and sliding-window group shares pool i; sliding windows clip the exchange";
    }
}
