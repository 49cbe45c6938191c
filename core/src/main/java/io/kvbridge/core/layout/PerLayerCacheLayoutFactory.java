package io.kvbridge.core.layout;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.layout.PerLayerBlockDescriptor.Order;
import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import java.util.Map;
import java.util.Set;

/**
 * Creates the {@code per-layer} layout. Option {@code block-order}: {@code heads-outermost}
 * (default; head-sliceable) or {@code tokens-outermost} (blocks move only between peers of equal
 * tensor-parallel size).
 */
public final class PerLayerCacheLayoutFactory implements CacheLayoutFactory
{
    /** Option naming the dimension order inside a block. */
    public static final String BLOCK_ORDER = "block-order";

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
        String order = options.choice(BLOCK_ORDER, Order.HEADS_OUTERMOST.optionValue(),
                Set.of(Order.HEADS_OUTERMOST.optionValue(), Order.TOKENS_OUTERMOST.optionValue()));
        options.finish();
        return new PerLayerCacheLayout(Order.fromOptionValue(order));
    }

    @Override
    public String description()
    {
        return "one allocation and one region per attention layer; heads-outermost (head-sliceable) or tokens-outermost blocks";
    }
}
