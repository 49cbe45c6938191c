package io.kvbridge.engine.jlama;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Rank;

import java.util.Collections;
import java.util.List;

/**
 * The pipeline stage an engine JVM serves: the contiguous layers it owns, split the way Jlama's
 * {@code DistributedContext} splits a model into layer shards (shard {@code p} of {@code n} owns
 * {@code layers / n} layers from {@code p * layers / n}). The engine still computes every layer of
 * a prompt; it registers and hands kvbridge the KV of its own layers only.
 *
 * <p>Everything that depends on which layers an engine serves asks this record, so that a later
 * per-layer hook (a layer's KV handed over as soon as its forward pass wrote it) iterates
 * {@link #firstLayer()} to {@link #endLayer()} here.
 *
 * @param ppRank the stage.
 * @param ppSize stages of the engine.
 * @param modelLayers the model's layers.
 */
public record JlamaStage(int ppRank, int ppSize, int modelLayers)
{
    /** Validates the values. */
    public JlamaStage
    {
        KvBridgeException.check(ppSize >= 1 && ppRank >= 0 && ppRank < ppSize, ErrorCode.INVALID_ARGUMENT, "stage %d of %d: need 0 <= stage < stages",
                ppRank, ppSize);
        // Jlama's layer shards are equal (numberOfLayers / numLayerShards each); a remainder would belong to no shard
        KvBridgeException.check(modelLayers >= ppSize && modelLayers % ppSize == 0, ErrorCode.INVALID_ARGUMENT,
                "%d layers do not split into %d equal pipeline stages, as Jlama shards layers; give a stage count that divides %d", modelLayers,
                ppSize, modelLayers);
    }

    /**
     * The whole model as one stage.
     *
     * @param modelLayers the model's layers.
     * @return stage 0 of 1.
     */
    public static JlamaStage whole(int modelLayers)
    {
        return new JlamaStage(0, 1, modelLayers);
    }

    /**
     * Returns the layers each stage owns.
     *
     * @return {@code ppSize} equal counts.
     */
    public List<Integer> stageLayerCounts()
    {
        return Collections.nCopies(ppSize, layers());
    }

    /**
     * Returns how many layers this stage owns.
     *
     * @return {@code modelLayers / ppSize}.
     */
    public int layers()
    {
        return modelLayers / ppSize;
    }

    /**
     * Returns the stage's first layer.
     *
     * @return its global index.
     */
    public int firstLayer()
    {
        return ppRank * layers();
    }

    /**
     * Returns the layer after the stage's last.
     *
     * @return its global index.
     */
    public int endLayer()
    {
        return firstLayer() + layers();
    }

    /**
     * Returns this stage's rank: one tensor-parallel rank.
     *
     * @return {@link Rank#single()} for the whole model, else {@code Rank.pipeline(ppRank, ppSize).tensor(0, 1)}.
     */
    public Rank rank()
    {
        return ppSize == 1 ? Rank.single() : Rank.pipeline(ppRank, ppSize).tensor(0, 1);
    }
}
