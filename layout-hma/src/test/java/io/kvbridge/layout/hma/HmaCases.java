package io.kvbridge.layout.hma;

import io.kvbridge.spi.geometry.CacheGroup;
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

/**
 * Inputs the hma layout is checked with. The placements are written from the allocator's rule
 * directly (the i-th layer of each group in pool i), independently of the layout's code.
 */
abstract class HmaCases extends AbstractCacheLayoutConformanceTest
{
    static final int CAPACITY = 10;

    @Override
    protected CacheLayoutFactory newFactory()
    {
        return new HmaCacheLayoutFactory();
    }

    /** One allocation per pool, the stage's layers placed by the allocator's rule. */
    LayoutCase pooledByRule(String name, ModelCacheSpec spec, Rank rank)
    {
        List<LayerSpec> layers = spec.layersOfStage(rank.ppRank());
        List<Allocation> pools = new ArrayList<>();
        List<LayerView> placement = new ArrayList<>();
        int[] seenPerGroup = new int[spec.groups().size()];
        for (LayerSpec layer : layers) {
            int pool = seenPerGroup[layer.groupId()]++;
            while (pools.size() <= pool) {
                pools.add(allocate(CAPACITY * HybridModels.PAGE));
            }
            placement.add(new LayerView(layer.name(), pools.get(pool).address(), HybridModels.PAGE, HybridModels.PAGE, CAPACITY));
        }
        return new LayoutCase(name, spec, CacheMemory.of(pools), rank, placement);
    }

    /** Attention layers pooled by the allocator's rule, then one allocation per Mamba layer holding its states. */
    LayoutCase pooledWithStates(String name, ModelCacheSpec spec, Rank rank)
    {
        List<LayerSpec> layers = spec.layersOfStage(rank.ppRank());
        long page = HybridModels.PAGE / rank.tpSize();
        List<Allocation> pools = new ArrayList<>();
        List<Allocation> states = new ArrayList<>();
        List<LayerView> placement = new ArrayList<>();
        int attention = 0;
        for (LayerSpec layer : layers) {
            CacheGroup group = spec.groups().get(layer.groupId());
            if (group.stateful()) {
                long stateBytes = group.stateBytes(rank.tpSize());
                Allocation home = allocate(CAPACITY * stateBytes);
                states.add(home);
                placement.add(new LayerView(layer.name(), home.address(), stateBytes, stateBytes, CAPACITY));
            }
            else {
                // one attention group: every attention layer is a pool of its own
                Allocation home = allocate(CAPACITY * page);
                pools.add(home);
                placement.add(new LayerView(layer.name(), home.address(), page, page, CAPACITY));
                attention++;
            }
        }
        List<Allocation> allocations = new ArrayList<>(pools);
        allocations.addAll(states);
        return new LayoutCase(name + " (" + attention + " pools)", spec, CacheMemory.of(allocations), rank, placement);
    }

    @Override
    protected List<LayoutCase> cases()
    {
        List<LayoutCase> cases = new ArrayList<>();
        cases.add(pooledByRule("24 sliding-window and 6 full-attention layers, PP1", HybridModels.twoGroups(List.of(30)), Rank.single()));
        cases.add(pooledByRule("the same model, PP2 stage 0", HybridModels.twoGroups(List.of(15, 15)), new Rank(0, 2, 0, 1)));
        cases.add(pooledByRule("the same model, PP2 stage 1", HybridModels.twoGroups(List.of(15, 15)), new Rank(1, 2, 0, 1)));
        cases.add(pooledByRule("five groups of six layers", HybridModels.sixLayerGroups(), Rank.single()));

        cases.add(pooledWithStates("hybrid Mamba-2: 2 attention pools and 6 state layers, PP1", HybridModels.hybridSsm(List.of(8), HybridModels.MAMBA2),
                Rank.single()));
        cases.add(pooledWithStates("the same hybrid, PP2 stage 1 at TP2", HybridModels.hybridSsm(List.of(4, 4), HybridModels.MAMBA2), new Rank(1, 2, 1, 2)));

        // views: the engine pooled layers pairwise in model order inside one tensor, pages padded to 1.5 KiB
        ModelCacheSpec spec = HybridModels.twoGroups(List.of(30));
        long stride = HybridModels.PAGE + 512;
        long poolBytes = CAPACITY * stride;
        Allocation tensor = allocate(15 * poolBytes);
        List<LayerView> views = new ArrayList<>();
        for (int i = 0; i < HybridModels.LAYERS; i++) {
            views.add(new LayerView(HybridModels.layer(i), tensor.address() + (i / 2) * poolBytes, HybridModels.PAGE, stride, CAPACITY));
        }
        cases.add(new LayoutCase("views: pairs of layers pooled in one tensor with padded pages", spec, new CacheMemory(List.of(tensor), views),
                Rank.single(), views));
        return cases;
    }
}
