package io.kvbridge.layout.mla;

import static io.kvbridge.layout.mla.MlaModels.PAGE;
import static io.kvbridge.layout.mla.MlaModels.layer;

import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.testkit.AbstractCacheLayoutConformanceTest;
import java.util.ArrayList;
import java.util.List;

/** Inputs the mla layout is checked with in its default ({@code auto}) packing. */
abstract class MlaCases extends AbstractCacheLayoutConformanceTest
{
    @Override
    protected CacheLayoutFactory newFactory()
    {
        return new MlaCacheLayoutFactory();
    }

    /** One allocation per layer of the stage. */
    LayoutCase perLayer(String name, ModelCacheSpec spec, Rank rank, int blocks)
    {
        List<Allocation> allocations = new ArrayList<>();
        List<LayerView> placement = new ArrayList<>();
        for (LayerSpec layer : spec.layersOfStage(rank.ppRank())) {
            Allocation allocation = allocate(blocks * PAGE);
            allocations.add(allocation);
            placement.add(new LayerView(layer.name(), allocation.address(), PAGE, PAGE, blocks));
        }
        return new LayoutCase(name, spec, CacheMemory.of(allocations), rank, placement);
    }

    /** Every layer of the stage packed block-outermost into one allocation. */
    LayoutCase packed(String name, ModelCacheSpec spec, Rank rank, int blocks)
    {
        List<LayerSpec> layers = spec.layersOfStage(rank.ppRank());
        long row = layers.size() * PAGE;
        Allocation allocation = allocate(blocks * row);
        List<LayerView> placement = new ArrayList<>();
        for (int k = 0; k < layers.size(); k++) {
            placement.add(new LayerView(layers.get(k).name(), allocation.address() + k * PAGE, PAGE, row, blocks));
        }
        return new LayoutCase(name, spec, CacheMemory.of(List.of(allocation)), rank, placement);
    }

    /** The same packed memory described through views. */
    LayoutCase packedViews(String name, ModelCacheSpec spec, Rank rank, int blocks)
    {
        LayoutCase packed = packed(name, spec, rank, blocks);
        return new LayoutCase(name, spec, new CacheMemory(packed.memory().allocations(), packed.placement()), rank, packed.placement());
    }

    /** Layers 0 and 1 interleaved in one buffer, layer 2 in its own, layer 3 aliasing layer 0; pages of 32 bytes. */
    LayoutCase aliasing()
    {
        int blocks = 8;
        Allocation shared = allocate(blocks * 64L);
        Allocation own = allocate(blocks * 32L);
        List<LayerView> views = MlaModels.aliasingViews(shared, own, blocks);
        return new LayoutCase("four layers: 0/1 share a buffer, 2 has its own, 3 aliases 0", MlaModels.spec(4, List.of(4)),
                new CacheMemory(List.of(shared, own), views), Rank.single(), views);
    }

    /** Two layers of two groups viewing one backing of 4 blocks with stride 64 and pages of 32 bytes. */
    LayoutCase twoViewsOfOneBacking()
    {
        Allocation backing = allocate(256);
        List<LayerView> views = List.of(
                new LayerView(layer(0), backing.address(), 32, 64, 4),
                new LayerView(layer(1), backing.address() + 32, 32, 64, 4));
        return new LayoutCase("two layers viewing one backing", MlaModels.spec(2, List.of(2), 0, 1), new CacheMemory(List.of(backing), views),
                Rank.single(), views);
    }

    /** Two layers interleaved in rows of 96 bytes whose last 32 bytes belong to no layer. */
    LayoutCase paddedRows()
    {
        int blocks = 4;
        Allocation backing = allocate(blocks * 96L);
        List<LayerView> views = List.of(
                new LayerView(layer(0), backing.address(), 32, 96, blocks),
                new LayerView(layer(1), backing.address() + 32, 32, 96, blocks));
        return new LayoutCase("two layers in rows with padding at the end", MlaModels.spec(2, List.of(2)), new CacheMemory(List.of(backing), views),
                Rank.single(), views);
    }

    /** Two layers stored one after the other in one allocation (layer outermost). */
    LayoutCase layerOuter()
    {
        int blocks = 5;
        Allocation tensor = allocate(2 * blocks * PAGE);
        List<LayerView> views = List.of(
                new LayerView(layer(0), tensor.address(), PAGE, PAGE, blocks),
                new LayerView(layer(1), tensor.address() + blocks * PAGE, PAGE, PAGE, blocks));
        return new LayoutCase("two layers one after the other in one tensor", MlaModels.spec(2, List.of(2)), new CacheMemory(List.of(tensor), views),
                Rank.single(), views);
    }

    @Override
    protected List<LayoutCase> cases()
    {
        return List.of(
                perLayer("three layers, one allocation each, TP4 rank 2", MlaModels.spec(3, List.of(3)), new Rank(0, 1, 2, 4), 6),
                perLayer("PP2 stage 1", MlaModels.spec(5, List.of(2, 3)), new Rank(1, 2, 0, 1), 4),
                packed("four layers packed, two blocks", MlaModels.spec(4, List.of(4)), Rank.single(), 2),
                packedViews("four layers packed, described by views", MlaModels.spec(4, List.of(4), 0, 0, 1, 1), Rank.single(), 3),
                aliasing(),
                twoViewsOfOneBacking(),
                paddedRows(),
                layerOuter());
    }
}
