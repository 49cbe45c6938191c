package io.kvbridge.core.layout;

import io.kvbridge.core.layout.PerLayerPlacement.KvPlanes;
import io.kvbridge.core.layout.PerLayerPlacement.Layers;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Inputs for the per-layer layout's K/V planes and cross-layer placement: the placement of every
 * key and value plane is computed here from the tensor shapes engines use, independently of the
 * layout, so the suite checks the layout against where the bytes really are.
 */
abstract class PlacementCases extends PerLayerCases
{
    private static final long HALF = PAGE / 2;

    /** @return how K and V are kept in these cases. */
    abstract KvPlanes planes();

    /** @return where layers are in these cases. */
    abstract Layers layers();

    @Override
    protected Map<String, String> config()
    {
        return Map.of(PerLayerCacheLayoutFactory.KV_PLANES, planes().optionValue(), PerLayerCacheLayoutFactory.PLACEMENT, layers().optionValue());
    }

    @Override
    protected List<LayoutCase> cases()
    {
        return List.of(
                placed("tp2 rank 1 of a 4-layer model", spec(4, 1, List.of(4)), new Rank(0, 1, 1, 2), 8),
                placed("pp2 stage 1 with two kernel blocks per scheduler block", spec(5, 2, List.of(3, 2)), new Rank(1, 2, 0, 2), 6));
    }

    private LayoutCase placed(String name, ModelCacheSpec spec, Rank rank, int capacity)
    {
        List<LayerSpec> owned = spec.layersOfStage(rank.ppRank());
        List<Allocation> allocations = new ArrayList<>();
        List<LayerView> keys = new ArrayList<>();
        List<LayerView> values = new ArrayList<>();
        int count = owned.size();
        Allocation shared = layers() == Layers.CROSS_LAYER ? allocate(capacity * count * PAGE) : null;
        if (shared != null) {
            allocations.add(shared);
        }
        for (int l = 0; l < count; l++) {
            String layer = owned.get(l).name();
            Allocation home = shared != null ? shared : allocate(capacity * PAGE);
            if (shared == null) {
                allocations.add(home);
            }
            // the layer's page in every row: its own allocation (row = page) or its slot of a cross-layer row
            long row = shared != null ? count * PAGE : PAGE;
            long offset = shared != null ? l * PAGE : 0;
            long base = home.address();
            switch (planes()) {
                case JOINT -> keys.add(new LayerView(layer, base + offset, PAGE, row, capacity));
                case BLOCKWISE -> {
                    keys.add(new LayerView(layer, base + offset, HALF, row, capacity));
                    values.add(new LayerView(layer, base + offset + HALF, HALF, row, capacity));
                }
                case SPLIT -> {
                    // [2, blocks, row / 2]
                    keys.add(new LayerView(layer, base + offset / 2, HALF, row / 2, capacity));
                    values.add(new LayerView(layer, base + capacity * (row / 2) + offset / 2, HALF, row / 2, capacity));
                }
            }
        }
        return new LayoutCase(name + ", kv-planes=" + planes().optionValue() + ", placement=" + layers().optionValue(), spec,
                CacheMemory.of(allocations), rank, keys, values);
    }
}
