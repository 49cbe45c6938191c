package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A deliberately simple layout, one region per layer view, with switchable {@link Defect}s that
 * show the layout conformance suite catches each kind of broken layout.
 */
final class TestingCacheLayoutFactory implements CacheLayoutFactory
{
    /** Ways to break the layout on purpose. */
    enum Defect
    {
        /** Leaves the last layer out of every region. */
        DROP_LAST_LAYER,
        /** Advertises group 0 for every region. */
        ALWAYS_GROUP_ZERO,
        /** Assumes blocks are packed tightly, ignoring each view's stride. */
        IGNORE_STRIDE,
        /** Lists the regions in a different order on every call. */
        SHUFFLE_REGIONS,
        /** Registers more memory than the engine gave. */
        WIDEN_ALLOCATIONS,
        /** Advertises one block less than each layer holds. */
        CAPACITY_ONE_SHORT,
        /** Accepts options it does not know. */
        LENIENT_OPTIONS
    }

    private final Set<Defect> defects;

    TestingCacheLayoutFactory()
    {
        this(Set.of());
    }

    TestingCacheLayoutFactory(Set<Defect> defects)
    {
        this.defects = defects.isEmpty() ? EnumSet.noneOf(Defect.class) : EnumSet.copyOf(defects);
    }

    @Override
    public String name()
    {
        return "testing-views";
    }

    @Override
    public int spiVersion()
    {
        return Spi.VERSION;
    }

    @Override
    public CacheLayout create(Map<String, String> config)
    {
        PluginConfig options = new PluginConfig(name(), requireNonNull(config, "config is null"));
        if (!defects.contains(Defect.LENIENT_OPTIONS)) {
            options.finish();
        }
        return new Layout();
    }

    // describe() calls of every layout so far: each rotates the regions one place further than the last,
    // so no two calls in a row agree, whichever layout instance makes them
    private static final AtomicInteger SHUFFLES = new AtomicInteger();

    private final class Layout implements CacheLayout
    {

        @Override
        public String name()
        {
            return TestingCacheLayoutFactory.this.name();
        }

        @Override
        public CacheGeometry describe(ModelCacheSpec spec, CacheMemory memory, Rank rank)
        {
            Map<String, Integer> groupOf = new HashMap<>();
            for (LayerSpec layer : spec.layers()) {
                groupOf.put(layer.name(), layer.groupId());
            }
            List<LayerView> views = new ArrayList<>(memory.views());
            if (defects.contains(Defect.DROP_LAST_LAYER)) {
                views.removeLast();
            }
            List<Allocation> used = new ArrayList<>();
            List<Region> regions = new ArrayList<>();
            for (LayerView view : views) {
                Allocation home = memory.allocationHolding(view);
                if (!used.contains(home)) {
                    used.add(home);
                }
                long stride = defects.contains(Defect.IGNORE_STRIDE) ? view.blockBytes() : view.blockStride();
                int capacity = defects.contains(Defect.CAPACITY_ONE_SHORT) ? view.blocks() - 1 : view.blocks();
                int group = defects.contains(Defect.ALWAYS_GROUP_ZERO) ? 0 : groupOf.get(view.layer());
                regions.add(new Region(view.layer(), view.address(), view.blockBytes(), stride, capacity, group, home.kind(), home.device(),
                        SplitClass.REPLICATE, List.of(view.layer()), List.of()));
            }
            if (defects.contains(Defect.SHUFFLE_REGIONS)) {
                // a rotation, not a shuffle: a random shuffle gives the same order twice often enough to fail a build
                Collections.rotate(regions, SHUFFLES.incrementAndGet());
            }
            if (defects.contains(Defect.WIDEN_ALLOCATIONS)) {
                used.replaceAll(a -> new Allocation(a.address(), a.bytes() + 64, a.kind(), a.device()));
            }
            int kernelTokens = spec.kernelBlockTokens();
            return new CacheGeometry(name(), rank, spec.identity(), kernelTokens, spec.kernelBlocksPerLogical(), spec.groups(), used, regions);
        }
    }
}
