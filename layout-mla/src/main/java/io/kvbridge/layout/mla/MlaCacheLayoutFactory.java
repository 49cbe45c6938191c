package io.kvbridge.layout.mla;

import static java.util.Objects.requireNonNull;

import io.kvbridge.layout.mla.MlaCacheLayout.Packing;
import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import java.util.Map;

/**
 * Creates the {@code mla} layout. Option {@code packing}: {@code auto} (default: packed where the
 * memory is packed), {@code packed} (one whole-row region for every layer, anything else rejected)
 * or {@code per-layer}.
 */
public final class MlaCacheLayoutFactory implements CacheLayoutFactory
{
    /** Option choosing how layers are grouped into regions. */
    public static final String PACKING = "packing";

    /** Creates the factory; {@link java.util.ServiceLoader} finds it through the module's {@code provides}. */
    public MlaCacheLayoutFactory()
    {
    }

    @Override
    public String name()
    {
        return MlaCacheLayout.NAME;
    }

    @Override
    public int spiVersion()
    {
        return Spi.VERSION;
    }

    @Override
    public CacheLayout create(Map<String, String> config)
    {
        PluginConfig options = new PluginConfig(name(), requireNonNull(config, "config is null"));
        Packing packing = options.choice(PACKING, Packing.AUTO);
        options.finish();
        return new MlaCacheLayout(packing);
    }

    @Override
    public String description()
    {
        return "MLA latent caches as replicated regions, one per layer or packed block-outermost into one whole-row region";
    }
}
