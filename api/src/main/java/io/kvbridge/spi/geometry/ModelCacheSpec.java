package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What an inference engine knows about its model's KV cache, independent of where the memory is:
 * the input of a {@link io.kvbridge.spi.layout.CacheLayout}.
 *
 * @param identity the model identity peers must agree on.
 * @param blockTokens tokens per scheduler (logical) block; positive.
 * @param kernelBlocksPerLogical attention-kernel blocks per logical block; positive.
 * @param groups cache groups in group-id order (group {@code i} has id {@code i}).
 * @param layers every layer that owns KV, in model order, with global names.
 * @param stageLayerCounts layers owned by each pipeline stage of this engine, in stage order; the
 *     counts sum to the number of layers. A single entry means no pipeline parallelism.
 */
public record ModelCacheSpec(
        ModelIdentity identity,
        int blockTokens,
        int kernelBlocksPerLogical,
        List<CacheGroup> groups,
        List<LayerSpec> layers,
        List<Integer> stageLayerCounts)
{
    /** Validates the values and copies the lists. */
    public ModelCacheSpec
    {
        requireNonNull(identity, "identity is null");
        groups = List.copyOf(requireNonNull(groups, "groups is null"));
        layers = List.copyOf(requireNonNull(layers, "layers is null"));
        stageLayerCounts = List.copyOf(requireNonNull(stageLayerCounts, "stageLayerCounts is null"));
        checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        checkArgument(kernelBlocksPerLogical > 0, "kernelBlocksPerLogical=%d is not positive", kernelBlocksPerLogical);
        checkArgument(blockTokens % kernelBlocksPerLogical == 0,
                "blockTokens=%d is not a multiple of kernelBlocksPerLogical=%d", blockTokens, kernelBlocksPerLogical);
        checkArgument(!groups.isEmpty(), "no cache groups");
        for (int i = 0; i < groups.size(); i++) {
            checkArgument(groups.get(i).id() == i, "group at position %d has id=%d (expected: ids 0..n-1 in order)", i, groups.get(i).id());
        }
        checkArgument(layers.size() == identity.layerCount(),
                "%d layers given but the model identity says layerCount=%d", layers.size(), identity.layerCount());
        Set<String> names = new HashSet<>();
        for (LayerSpec layer : layers) {
            checkArgument(names.add(layer.name()), "layer %s is listed twice", layer.name());
            checkArgument(layer.groupId() < groups.size(), "layer %s: groupId=%d but only %d groups exist", layer.name(), layer.groupId(), groups.size());
        }
        checkArgument(!stageLayerCounts.isEmpty(), "stageLayerCounts is empty (expected: one entry per pipeline stage)");
        int total = 0;
        for (int count : stageLayerCounts) {
            checkArgument(count > 0, "stageLayerCounts=%s has a stage without layers", stageLayerCounts);
            total += count;
        }
        checkArgument(total == layers.size(), "stageLayerCounts=%s sums to %d, not to the %d layers", stageLayerCounts, total, layers.size());
    }

    /**
     * Returns the tokens of one attention-kernel block.
     *
     * @return {@code blockTokens / kernelBlocksPerLogical}.
     */
    public int kernelBlockTokens()
    {
        return blockTokens / kernelBlocksPerLogical;
    }

    /**
     * Returns the number of pipeline stages.
     *
     * @return the size of {@link #stageLayerCounts()}.
     */
    public int ppSize()
    {
        return stageLayerCounts.size();
    }

    /**
     * Returns the index of the first layer a stage owns.
     *
     * @param ppRank stage.
     * @return the layer index where the stage's contiguous slice starts.
     */
    public int stageStart(int ppRank)
    {
        checkArgument(ppRank >= 0 && ppRank < stageLayerCounts.size(), "ppRank=%d is outside [0, %d)", ppRank, stageLayerCounts.size());
        int start = 0;
        for (int i = 0; i < ppRank; i++) {
            start += stageLayerCounts.get(i);
        }
        return start;
    }

    /**
     * Returns the layers a stage owns.
     *
     * @param ppRank stage.
     * @return its contiguous slice of {@link #layers()}.
     */
    public List<LayerSpec> layersOfStage(int ppRank)
    {
        int start = stageStart(ppRank);
        return layers.subList(start, start + stageLayerCounts.get(ppRank));
    }

    /**
     * Returns the layers a rank owns: its stage's slice, after checking the rank belongs to an
     * engine split the way this spec says.
     *
     * @param rank the rank.
     * @return the layers of {@code rank.ppRank()}.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} when the rank's
     *     {@code ppSize} differs from the number of stages.
     */
    public List<LayerSpec> layersOwnedBy(Rank rank)
    {
        requireNonNull(rank, "rank is null");
        checkArgument(rank.ppSize() == ppSize(), "rank %s has ppSize=%d but the spec splits the model into %d stages %s; describe each rank "
                + "with the spec of its own engine", rank, rank.ppSize(), ppSize(), stageLayerCounts);
        return layersOfStage(rank.ppRank());
    }

    /**
     * Splits {@code layerCount} layers as evenly as possible over {@code ppSize} stages, earlier
     * stages taking the remainder.
     *
     * @param layerCount layers.
     * @param ppSize stages.
     * @return the per-stage counts.
     */
    public static List<Integer> evenStages(int layerCount, int ppSize)
    {
        checkArgument(ppSize > 0 && ppSize <= layerCount, "cannot split %d layers over ppSize=%d stages", layerCount, ppSize);
        Integer[] counts = new Integer[ppSize];
        for (int i = 0; i < ppSize; i++) {
            counts[i] = layerCount / ppSize + (i < layerCount % ppSize ? 1 : 0);
        }
        return List.of(counts);
    }
}
