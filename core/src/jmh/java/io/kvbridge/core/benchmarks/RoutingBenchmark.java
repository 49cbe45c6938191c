package io.kvbridge.core.benchmarks;

import io.kvbridge.api.TransferMode;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.core.routing.Routing;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Layer-name routing of the seed scenario at a realistic size: stage 0 of a PP2 producer of a
 * 93-layer hybrid model (full attention every fourth layer, sliding window otherwise; 47 layers in
 * 36 pools) pushing into a PP1 decoder (70 pools), both described by the {@code hma} layout over
 * synthetic device allocations. Measures the handshake-time routing and checks, the decoder's
 * remote list for the plan (47 entries), and the per-request indices (64 full-attention and 8
 * sliding-window blocks, 992 pairs), which must allocate nothing. The baseline for the indices is
 * the same stage paired by position with an identically pooled peer stage (36 whole pools, group -1
 * pools taking both groups' ids: the same 992 pairs).
 */
@State(Scope.Thread)
public class RoutingBenchmark extends MicrosecondBenchmark
{
    private static final int LAYERS = 93;
    private static final long PAGE = 8L * 16 * 2 * 128 * 2;

    private List<LayerSpec> layers;
    private CacheGeometry stage;
    private CacheGeometry decoder;
    private TransferPlan plan;
    private TransferPlan positional;
    private int[][] localIds;
    private int[][] remoteIds;
    private int[][] peerStageIds;
    private BlockSelection localBlocks;
    private BlockSelection remoteBlocks;
    private int[] localIndices;
    private int[] remoteIndices;

    /** Describes both engines and routes them once. */
    @Setup
    public void setUp()
    {
        List<LayerSpec> specs = new ArrayList<>();
        for (int i = 0; i < LAYERS; i++) {
            specs.add(new LayerSpec("model.layers." + i + ".self_attn", i % 4 == 3 ? 0 : 1));
        }
        layers = List.copyOf(specs);
        List<CacheGroup> groups = List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128), new CacheGroup(1, GroupKind.SLIDING_WINDOW, 128, 8, 128));
        ModelIdentity model = new ModelIdentity("bench-hybrid", "bfloat16", "bfloat16", 8, 128, LAYERS, true);
        CacheLayout hma = PluginRegistry.discover(RoutingBenchmark.class.getClassLoader()).layout("hma").create(Map.of());
        ModelCacheSpec producer = new ModelCacheSpec(model, 16, 1, groups, layers, ModelCacheSpec.evenStages(LAYERS, 2));
        ModelCacheSpec consumer = new ModelCacheSpec(model, 16, 1, groups, layers, List.of(LAYERS));
        stage = hma.describe(producer, CacheMemory.of(pools(36, 4096, 0x10_0000_0000L)), new Rank(0, 2, 0, 1));
        decoder = hma.describe(consumer, CacheMemory.of(pools(70, 8192, 0x90_0000_0000L)), new Rank(0, 1, 0, 1));
        plan = Routing.plan(layers, stage, decoder, TransferMode.PUSH);
        positional = TransferPlan.pair(stage, hma.describe(producer, CacheMemory.of(pools(36, 4096, 0x50_0000_0000L)), new Rank(0, 2, 0, 1)));
        localIds = new int[][] {UniformCaches.consecutiveIds(100, 64), UniformCaches.consecutiveIds(400, 8)};
        remoteIds = new int[][] {UniformCaches.consecutiveIds(2000, 64), UniformCaches.consecutiveIds(5000, 8)};
        peerStageIds = new int[][] {UniformCaches.consecutiveIds(1000, 64), UniformCaches.consecutiveIds(3000, 8)};
        localBlocks = new BlockSelection(2);
        remoteBlocks = new BlockSelection(2);
        localIndices = new int[plan.indexCount(0, BlockSelection.of(localIds))];
        remoteIndices = new int[localIndices.length];
    }

    private static List<Allocation> pools(int count, int capacity, long firstBase)
    {
        List<Allocation> pools = new ArrayList<>();
        for (int p = 0; p < count; p++) {
            pools.add(new Allocation(firstBase + p * (1L << 32), capacity * PAGE, MemoryKind.DEVICE, 0));
        }
        return pools;
    }

    /**
     * Routes the stage to the decoder and checks the plan, as a handshake does.
     *
     * @return the plan's entry count, so the work is not eliminated.
     */
    @Benchmark
    public int route()
    {
        return Routing.plan(layers, stage, decoder, TransferMode.PUSH).entries().size();
    }

    /**
     * Builds the decoder's remote list for the routed plan (prepared once per peer rank).
     *
     * @return the list size.
     */
    @Benchmark
    public int remoteList()
    {
        return plan.remoteDescriptors(decoder).size();
    }

    /**
     * One request's indices on both sides into reused arrays.
     *
     * @return the number of pairs.
     */
    @Benchmark
    public int indices()
    {
        localBlocks.select(localIds);
        remoteBlocks.select(remoteIds);
        return plan.indices(0, localBlocks, localIndices, remoteBlocks, remoteIndices);
    }

    /**
     * Baseline: the same request through the index-routed plan of two identically pooled stages.
     *
     * @return the number of pairs.
     */
    @Benchmark
    public int indicesIndexRouted()
    {
        localBlocks.select(localIds);
        remoteBlocks.select(peerStageIds);
        return positional.indices(0, localBlocks, localIndices, remoteBlocks, remoteIndices);
    }
}
