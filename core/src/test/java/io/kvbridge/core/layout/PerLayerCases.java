package io.kvbridge.core.layout;

import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.testkit.AbstractCacheLayoutConformanceTest;
import java.util.ArrayList;
import java.util.List;

/**
 * Inputs the per-layer layout is checked with, in both block orders: a TP2 rank of a 4-layer model
 * with a full-attention and a sliding-window group, the second stage of a PP2 engine with two kernel
 * blocks per scheduler block, and layer views with padded strides. The wire round trip is the
 * suite's default: kvbridge-core's own format, found on this class path as an outside layout's
 * tests find it.
 */
abstract class PerLayerCases extends AbstractCacheLayoutConformanceTest
{
    // 4 KV heads over TP2 = 2 heads x 16 tokens x (2 x 16 elements x 2 bytes) = 2048 bytes per block
    static final long PAGE = 2 * 16 * 2 * 16 * 2;

    @Override
    protected CacheLayoutFactory newFactory()
    {
        return new PerLayerCacheLayoutFactory();
    }

    static ModelCacheSpec spec(int layers, int kernelBlocksPerLogical, List<Integer> stages)
    {
        ModelIdentity identity = new ModelIdentity("plain-model", "bfloat16", "bfloat16", 4, 16, layers, false);
        List<LayerSpec> specs = new ArrayList<>();
        for (int i = 0; i < layers; i++) {
            specs.add(new LayerSpec("model.layers." + i + ".self_attn", i % 2));
        }
        return new ModelCacheSpec(identity, 16 * kernelBlocksPerLogical, kernelBlocksPerLogical,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 4, 16), new CacheGroup(1, GroupKind.SLIDING_WINDOW, 64, 4, 16)), specs, stages);
    }

    @Override
    protected List<LayoutCase> cases()
    {
        List<LayoutCase> cases = new ArrayList<>();

        ModelCacheSpec plain = spec(4, 1, List.of(4));
        List<Allocation> allocations = new ArrayList<>();
        List<LayerView> placement = new ArrayList<>();
        for (LayerSpec layer : plain.layers()) {
            Allocation allocation = allocate(8 * PAGE);
            allocations.add(allocation);
            placement.add(new LayerView(layer.name(), allocation.address(), PAGE, PAGE, 8));
        }
        cases.add(new LayoutCase("tp2 rank 1, one allocation per layer", plain, CacheMemory.of(allocations), new Rank(0, 1, 1, 2), placement));

        ModelCacheSpec staged = spec(5, 2, List.of(3, 2));
        List<Allocation> stageAllocations = new ArrayList<>();
        List<LayerView> stagePlacement = new ArrayList<>();
        for (LayerSpec layer : staged.layersOfStage(1)) {
            Allocation allocation = allocate(6 * PAGE);
            stageAllocations.add(allocation);
            stagePlacement.add(new LayerView(layer.name(), allocation.address(), PAGE, PAGE, 6));
        }
        cases.add(new LayoutCase("pp2 stage 1 with two kernel blocks per scheduler block", staged, CacheMemory.of(stageAllocations),
                new Rank(1, 2, 0, 2), stagePlacement));

        List<Allocation> padded = new ArrayList<>();
        List<LayerView> views = new ArrayList<>();
        for (LayerSpec layer : plain.layers()) {
            Allocation allocation = allocate(5 * (PAGE + 512));
            padded.add(allocation);
            views.add(new LayerView(layer.name(), allocation.address(), PAGE, PAGE + 512, 5));
        }
        cases.add(new LayoutCase("views with 512 bytes of padding after every block", plain, new CacheMemory(padded, views), new Rank(0, 1, 0, 2), views));
        return cases;
    }
}
