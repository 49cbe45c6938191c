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
import io.kvbridge.spi.geometry.StateComponent;
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
 * The planner's per-request cost on a hybrid Mamba model: 36 layers, full attention every fourth
 * (9 layers, 8 KV heads of 128, bf16) and Mamba-2 otherwise (27 layers: 64 heads of 64 with state
 * size 128, 8 B/C groups, a convolution window of 3, bf16 convolution and fp32 SSM state), both
 * engines described by the {@code hma} layout. A TP 1 decoder pulls from a TP 2 producer, so every
 * state layer moves as 4 components from 2 sources. One request: 64 attention blocks and one state.
 * The indices must allocate nothing.
 */
@State(Scope.Thread)
public class HybridStateBenchmark extends MicrosecondBenchmark
{
    private static final int LAYERS = 36;

    private TransferPlan plan;
    private int[][] localIds;
    private int[][] remoteIds;
    private BlockSelection localBlocks;
    private BlockSelection remoteBlocks;
    private int[] localIndices;
    private int[] remoteIndices;

    /** Describes both engines and plans the decoder's rank 0 against the producer once. */
    @Setup
    public void setUp()
    {
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < LAYERS; i++) {
            layers.add(new LayerSpec("model.layers." + i, i % 4 == 3 ? 0 : 1));
        }
        CacheGroup mamba = new CacheGroup(1, GroupKind.MAMBA, 0, 64, 64, StateComponent.mamba2(64, 64, 128, 8, 3, "bfloat16", "float32"));
        List<CacheGroup> groups = List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128), mamba);
        ModelIdentity model = new ModelIdentity("bench-hybrid-ssm", "bfloat16", "bfloat16", 8, 128, LAYERS, true);
        ModelCacheSpec spec = new ModelCacheSpec(model, 16, 1, groups, layers, List.of(LAYERS));
        CacheLayout hma = PluginRegistry.discover(HybridStateBenchmark.class.getClassLoader()).layout("hma").create(Map.of());
        CacheGeometry decoder = hma.describe(spec, CacheMemory.of(allocations(mamba, 1, 0x10_0000_0000L)), new Rank(0, 1, 0, 1));
        CacheGeometry producer = hma.describe(spec, CacheMemory.of(allocations(mamba, 2, 0x90_0000_0000L)), new Rank(0, 1, 0, 2));
        plan = Routing.plan(layers, decoder, producer, TransferMode.PULL);
        localIds = new int[][] {UniformCaches.consecutiveIds(100, 64), {7}};
        remoteIds = new int[][] {UniformCaches.consecutiveIds(2000, 64), {3}};
        localBlocks = BlockSelection.forGroups(groups);
        remoteBlocks = BlockSelection.forGroups(groups);
        localIndices = new int[plan.indexCount(0, BlockSelection.forGroups(groups).select(localIds))];
        remoteIndices = new int[localIndices.length];
    }

    /** 9 attention pools of 8,192 pages, then 27 state allocations of 256 states, at a TP size. */
    private static List<Allocation> allocations(CacheGroup mamba, int tpSize, long firstBase)
    {
        long page = 8L / tpSize * 16 * 2 * 128 * 2;
        List<Allocation> allocations = new ArrayList<>();
        for (int p = 0; p < 9; p++) {
            allocations.add(new Allocation(firstBase + p * (1L << 32), 8192 * page, MemoryKind.DEVICE, 0));
        }
        for (int s = 0; s < 27; s++) {
            allocations.add(new Allocation(firstBase + (9 + s) * (1L << 32), 256 * mamba.stateBytes(tpSize), MemoryKind.DEVICE, 0));
        }
        return allocations;
    }

    /**
     * One request's indices for source slot 0 on both sides into reused arrays.
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
     * The same request for source slot 1 (the second producer rank's half of every state component).
     *
     * @return the number of pairs.
     */
    @Benchmark
    public int indicesSecondSource()
    {
        localBlocks.select(localIds);
        remoteBlocks.select(remoteIds);
        return plan.indices(1, localBlocks, localIndices, remoteBlocks, remoteIndices);
    }
}
