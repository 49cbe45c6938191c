package io.kvbridge.testkit;

import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.util.List;

/**
 * The input the fake layout is checked with, shared by the conforming fake and the broken ones. It
 * interleaves two layers inside one allocation (stride twice the page, so a layout that ignores
 * strides or overlaps blocks is caught) and gives a layer of a second group its own allocation.
 */
abstract class TestingLayoutCases extends AbstractCacheLayoutConformanceTest
{
    static final int BLOCKS = 6;
    static final long PAGE = 256;

    @Override
    protected List<LayoutCase> cases()
    {
        ModelIdentity identity = new ModelIdentity("testing-model", "bfloat16", "bfloat16", 1, 64, 3, true);
        ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1,
                List.of(new CacheGroup(0, GroupKind.MLA, 0, 1, 64), new CacheGroup(1, GroupKind.MLA, 0, 1, 64)),
                List.of(new LayerSpec("layers.0", 0), new LayerSpec("layers.1", 0), new LayerSpec("layers.2", 1)), List.of(3));
        Allocation interleaved = allocate(BLOCKS * 2 * PAGE);
        Allocation own = allocate(BLOCKS * PAGE);
        List<LayerView> views = List.of(
                new LayerView("layers.0", interleaved.address(), PAGE, 2 * PAGE, BLOCKS),
                new LayerView("layers.1", interleaved.address() + PAGE, PAGE, 2 * PAGE, BLOCKS),
                new LayerView("layers.2", own.address(), PAGE, PAGE, BLOCKS));
        return List.of(new LayoutCase("interleaved pair and a single layer", spec, new CacheMemory(List.of(interleaved, own), views), Rank.single(), views));
    }
}
