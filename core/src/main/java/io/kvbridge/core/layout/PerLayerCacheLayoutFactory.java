package io.kvbridge.core.layout;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.layout.PerLayerBlockDescriptor.Order;
import io.kvbridge.core.layout.PerLayerPlacement.KvPlanes;
import io.kvbridge.core.layout.PerLayerPlacement.Layers;
import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import java.util.Map;

/**
 * Creates the {@code per-layer} layout. Options: {@code block-order}: {@code heads-outermost}
 * (default; head-sliceable) or {@code tokens-outermost} (blocks move only between peers of equal
 * tensor-parallel size); {@code kv-planes}: {@code joint} (default), {@code split} or
 * {@code blockwise}; {@code placement}: {@code per-layer} (default) or {@code cross-layer}.
 */
public final class PerLayerCacheLayoutFactory implements CacheLayoutFactory
{
    /** Option naming the dimension order inside a block. */
    public static final String BLOCK_ORDER = "block-order";
    /** Option naming how K and V of a layer are kept: {@code joint}, {@code split} or {@code blockwise}. */
    public static final String KV_PLANES = "kv-planes";
    /** Option naming where layers are: {@code per-layer} or {@code cross-layer}. */
    public static final String PLACEMENT = "placement";

    /** Creates the factory; {@link java.util.ServiceLoader} finds it through {@code META-INF/services}. */
    public PerLayerCacheLayoutFactory()
    {
    }

    @Override
    public String name()
    {
        return PerLayerCacheLayout.NAME;
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
        Order order = options.choice(BLOCK_ORDER, Order.HEADS_OUTERMOST);
        KvPlanes planes = options.choice(KV_PLANES, KvPlanes.JOINT);
        Layers layers = options.choice(PLACEMENT, Layers.PER_LAYER);
        options.finish();
        return new PerLayerCacheLayout(order, new PerLayerPlacement(planes, layers));
    }

    @Override
    public String description()
    {
        return "one region per attention layer (two with K/V planes), per-layer or cross-layer allocations; heads-outermost (head-sliceable) or tokens-outermost blocks";
    }
}
