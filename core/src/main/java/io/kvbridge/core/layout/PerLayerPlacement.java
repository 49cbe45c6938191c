package io.kvbridge.core.layout;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.PluginConfig;

/**
 * Where the {@code per-layer} layout finds each layer's keys and values: how K and V share a block
 * ({@link KvPlanes}) and whether layers have allocations of their own or share one block-major
 * allocation ({@link Layers}). Diagrams are in the core module's README.
 *
 * @param planes how K and V of a layer are kept.
 * @param layers how layers are placed.
 */
public record PerLayerPlacement(KvPlanes planes, Layers layers)
{
    /** The placement of today's engines: K and V side by side, one allocation per layer. */
    public static final PerLayerPlacement DEFAULT = new PerLayerPlacement(KvPlanes.JOINT, Layers.PER_LAYER);

    /** How keys and values of a layer are kept; option {@code kv-planes}. */
    public enum KvPlanes
    {
        /** K and V of each token side by side in one block: one region per layer. */
        JOINT,
        /** Two planes, all keys then all values ({@code [2, blocks, ...]}): two regions per layer. */
        SPLIT,
        /** Each block holds its keys, then its values ({@code [blocks, 2, ...]}): two strided regions per layer. */
        BLOCKWISE;

        /** {@return the value of the {@code kv-planes} option} */
        public String optionValue()
        {
            return PluginConfig.optionValue(this);
        }
    }

    /** How layers are placed; option {@code placement}. */
    public enum Layers
    {
        /** One allocation per layer, blocks of the layer back to back. */
        PER_LAYER,
        /** One allocation whose every block holds each layer's page in model order ({@code [blocks, layers, ...]}). */
        CROSS_LAYER;

        /** {@return the value of the {@code placement} option} */
        public String optionValue()
        {
            return PluginConfig.optionValue(this);
        }
    }

    /** Checks the values. */
    public PerLayerPlacement
    {
        requireNonNull(planes, "planes is null");
        requireNonNull(layers, "layers is null");
    }
}
