package io.kvbridge.core.layout;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Arrays;
import java.util.Locale;

/**
 * Where the {@code per-layer} layout finds each layer's keys and values: how K and V share a block
 * ({@link KvPlanes}) and whether layers have allocations of their own or share one block-major
 * allocation ({@link Layers}). Diagrams are in the module's {@code docs/layouts.md}.
 *
 * @param planes how K and V of a layer are kept.
 * @param layers how layers are placed.
 */
public record PerLayerPlacement(KvPlanes planes, Layers layers)
{
    /** The placement of today's engines: K and V side by side, one allocation per layer. */
    public static final PerLayerPlacement DEFAULT = new PerLayerPlacement(KvPlanes.JOINT, Layers.PER_LAYER);

    /** How keys and values of a layer are kept. */
    public enum KvPlanes
    {
        /** K and V of each token side by side in one block: one region per layer. */
        JOINT("joint"),
        /** Two planes, all keys then all values ({@code [2, blocks, ...]}): two regions per layer. */
        SPLIT("split"),
        /** Each block holds its keys, then its values ({@code [blocks, 2, ...]}): two strided regions per layer. */
        BLOCKWISE("blockwise");

        private final String optionValue;

        KvPlanes(String optionValue)
        {
            this.optionValue = optionValue;
        }

        /** @return the value of the {@code kv-planes} option. */
        public String optionValue()
        {
            return optionValue;
        }

        /**
         * Finds the planes an option value names.
         *
         * @param value {@code joint}, {@code split} or {@code blockwise}.
         * @return the constant.
         */
        public static KvPlanes fromOptionValue(String value)
        {
            return Arrays.stream(values()).filter(planes -> planes.optionValue.equals(value)).findFirst()
                    .orElseThrow(() -> new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT,
                            "kv-planes=%s is not joint, split or blockwise", value)));
        }
    }

    /** How layers are placed. */
    public enum Layers
    {
        /** One allocation per layer, blocks of the layer back to back. */
        PER_LAYER("per-layer"),
        /** One allocation whose every block holds each layer's page in model order ({@code [blocks, layers, ...]}). */
        CROSS_LAYER("cross-layer");

        private final String optionValue;

        Layers(String optionValue)
        {
            this.optionValue = optionValue;
        }

        /** @return the value of the {@code placement} option. */
        public String optionValue()
        {
            return optionValue;
        }

        /**
         * Finds the placement an option value names.
         *
         * @param value {@code per-layer} or {@code cross-layer}.
         * @return the constant.
         */
        public static Layers fromOptionValue(String value)
        {
            return Arrays.stream(values()).filter(layers -> layers.optionValue.equals(value)).findFirst()
                    .orElseThrow(() -> new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT,
                            "placement=%s is not per-layer or cross-layer", value)));
        }
    }

    /** Checks the values. */
    public PerLayerPlacement
    {
        java.util.Objects.requireNonNull(planes, "planes is null");
        java.util.Objects.requireNonNull(layers, "layers is null");
    }

    /**
     * Returns the number of parts a layer's block is kept in.
     *
     * @return 1 for joint K/V, 2 for planes.
     */
    public int parts()
    {
        return planes == KvPlanes.JOINT ? 1 : 2;
    }
}
