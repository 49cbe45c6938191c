package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

/**
 * What two peers must agree on to exchange KV at all; the compatibility hash covers exactly this.
 * Block size, tensor-parallel size, capacities and layout are deliberately not part of it: they are
 * checked by the planner so that heterogeneous peers can pair.
 *
 * @param model model name or path.
 * @param dtype model compute dtype, e.g. {@code bfloat16}.
 * @param cacheDtype KV-cache element dtype, e.g. {@code bfloat16} or {@code fp8_e4m3}.
 * @param totalKvHeads KV heads of the model's primary attention across all ranks.
 * @param headSize elements per head of the primary attention.
 * @param layerCount total number of layers that own KV (not per stage).
 * @param hma whether the hybrid memory allocator groups layers.
 */
public record ModelIdentity(String model, String dtype, String cacheDtype, int totalKvHeads, int headSize, int layerCount, boolean hma)
{
    /** Validates the values. */
    public ModelIdentity
    {
        requireNonNull(model, "model is null");
        requireNonNull(dtype, "dtype is null");
        requireNonNull(cacheDtype, "cacheDtype is null");
        checkArgument(!model.isEmpty(), "model name is empty");
        checkArgument(totalKvHeads > 0, "totalKvHeads=%d is not positive", totalKvHeads);
        checkArgument(headSize > 0, "headSize=%d is not positive", headSize);
        checkArgument(layerCount > 0, "layerCount=%d is not positive", layerCount);
    }

    /**
     * Starts an identity from named values, the readable form of the record's positional constructor.
     *
     * <pre>{@code
     * ModelIdentity model = ModelIdentity.builder("meta-llama/Llama-3.1-8B")
     *         .dtype("bfloat16").cacheDtype("bfloat16").totalKvHeads(8).headSize(128).layerCount(32)
     *         .build();
     * }</pre>
     *
     * @param model model name or path.
     * @return a builder; see {@link ModelIdentityBuilder} for what is required.
     */
    public static ModelIdentityBuilder builder(String model)
    {
        return new ModelIdentityBuilder(model);
    }

    /**
     * Returns the size of one cache element in bytes, derived from {@link #cacheDtype()}.
     *
     * @return 1, 2 or 4.
     */
    public int cacheElementBytes()
    {
        String type = cacheDtype.toLowerCase(java.util.Locale.ROOT);
        if (type.startsWith("fp8") || type.equals("int8") || type.equals("uint8")) {
            return 1;
        }
        if (type.equals("float32") || type.equals("fp32")) {
            return 4;
        }
        if (type.equals("bfloat16") || type.equals("bf16") || type.equals("float16") || type.equals("fp16") || type.equals("half")) {
            return 2;
        }
        throw new io.kvbridge.spi.KvBridgeException(io.kvbridge.spi.ErrorCode.INVALID_ARGUMENT,
                "cacheDtype=" + cacheDtype + " is not known (expected: bfloat16, float16, float32, fp8_e4m3, fp8_e5m2, int8)");
    }
}
