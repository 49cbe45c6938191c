package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

/**
 * Builds a {@link ModelIdentity} from named values, so that the dtypes and the head and layer counts
 * cannot trade places the way they can in the record's positional constructor. {@link #build()}
 * refuses a required value that was never set, naming it, and otherwise calls the record's
 * canonical constructor, which does every other check.
 *
 * <p>Required: {@link #dtype}, {@link #cacheDtype}, {@link #totalKvHeads}, {@link #headSize} and
 * {@link #layerCount}. {@link #hma} is false when not set.
 *
 * <pre>{@code
 * ModelIdentity model = ModelIdentity.builder("meta-llama/Llama-3.1-8B")
 *         .dtype("bfloat16").cacheDtype("fp8_e4m3")
 *         .totalKvHeads(8).headSize(128).layerCount(32)
 *         .build();
 * }</pre>
 *
 * <p>Not thread-safe; build an identity on one thread.
 */
public final class ModelIdentityBuilder
{
    private final String model;
    private String dtype;
    private String cacheDtype;
    private int totalKvHeads;
    private boolean totalKvHeadsSet;
    private int headSize;
    private boolean headSizeSet;
    private int layerCount;
    private boolean layerCountSet;
    private boolean hma;

    ModelIdentityBuilder(String model)
    {
        this.model = requireNonNull(model, "model is null");
    }

    /**
     * Sets the model's compute dtype.
     *
     * @param name e.g. {@code bfloat16}.
     * @return this builder.
     */
    public ModelIdentityBuilder dtype(String name)
    {
        this.dtype = requireNonNull(name, "dtype is null");
        return this;
    }

    /**
     * Sets the KV-cache element dtype.
     *
     * @param name e.g. {@code bfloat16} or {@code fp8_e4m3}.
     * @return this builder.
     */
    public ModelIdentityBuilder cacheDtype(String name)
    {
        this.cacheDtype = requireNonNull(name, "cacheDtype is null");
        return this;
    }

    /**
     * Sets the KV heads of the model's primary attention across all ranks.
     *
     * @param heads positive.
     * @return this builder.
     */
    public ModelIdentityBuilder totalKvHeads(int heads)
    {
        this.totalKvHeads = heads;
        this.totalKvHeadsSet = true;
        return this;
    }

    /**
     * Sets the elements per head of the primary attention.
     *
     * @param elements positive.
     * @return this builder.
     */
    public ModelIdentityBuilder headSize(int elements)
    {
        this.headSize = elements;
        this.headSizeSet = true;
        return this;
    }

    /**
     * Sets the total number of layers that own KV (not per stage).
     *
     * @param layers positive.
     * @return this builder.
     */
    public ModelIdentityBuilder layerCount(int layers)
    {
        this.layerCount = layers;
        this.layerCountSet = true;
        return this;
    }

    /**
     * Sets whether the hybrid memory allocator groups layers; false when not set.
     *
     * @param grouped true for a hybrid-allocator model.
     * @return this builder.
     */
    public ModelIdentityBuilder hma(boolean grouped)
    {
        this.hma = grouped;
        return this;
    }

    /**
     * Builds the identity through its canonical constructor.
     *
     * @return the identity.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} naming a required value
     *     that was not set, or any value the record refuses.
     */
    public ModelIdentity build()
    {
        require(dtype != null, "dtype", ".dtype(\"bfloat16\")");
        require(cacheDtype != null, "cacheDtype", ".cacheDtype(\"bfloat16\")");
        require(totalKvHeadsSet, "totalKvHeads", ".totalKvHeads(heads)");
        require(headSizeSet, "headSize", ".headSize(elements)");
        require(layerCountSet, "layerCount", ".layerCount(layers)");
        return new ModelIdentity(model, dtype, cacheDtype, totalKvHeads, headSize, layerCount, hma);
    }

    private void require(boolean set, String field, String fix)
    {
        checkArgument(set, "model %s: %s is not set (expected: %s before build())", model, field, fix);
    }
}
