package io.kvbridge.core.benchmarks;

import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.DescriptorList;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Per-request work of the planner for 80 layers x 64 blocks (5,120 descriptor pairs): run the
 * block id pipeline and compute both sides' descriptor indices into reused arrays; optionally
 * resolve them to copies and coalesce. Target: under 10 us and 0 bytes allocated per operation.
 */
@State(Scope.Thread)
public class DescriptorIndexBenchmark extends MicrosecondBenchmark
{
    private static final int LAYERS = 80;
    private static final int BLOCKS = 64;

    /** Consumer TP size reading a TP 1 producer: 1 moves whole blocks, 2 head slices. */
    @Param({"1", "2"})
    public int consumerTp;

    private TransferPlan plan;
    private int[][] localIds;
    private int[][] remoteIds;
    private BlockSelection localBlocks;
    private BlockSelection remoteBlocks;
    private int[] localIndices;
    private int[] remoteIndices;
    private DescriptorList localList;
    private DescriptorList remoteList;
    private DescriptorPairs pairs;

    /** Builds the plan, the lists and the reused buffers once. */
    @Setup
    public void setUp()
    {
        CacheGeometry consumer = UniformCaches.describe(LAYERS, 0, consumerTp, 65_536, 2048, 0x10_0000_0000L);
        CacheGeometry producer = UniformCaches.describe(LAYERS, 0, 1, 65_536, 4096, 0x90_0000_0000L);
        plan = TransferPlan.pair(consumer, producer);
        localIds = new int[][] {UniformCaches.consecutiveIds(700, BLOCKS)};
        remoteIds = new int[][] {UniformCaches.consecutiveIds(3000, BLOCKS)};
        localBlocks = new BlockSelection(1);
        remoteBlocks = new BlockSelection(1);
        localIndices = new int[LAYERS * BLOCKS];
        remoteIndices = new int[LAYERS * BLOCKS];
        localList = plan.localDescriptors(0);
        remoteList = plan.remoteDescriptors(producer);
        pairs = new DescriptorPairs(LAYERS * BLOCKS);
    }

    /**
     * Block id pipeline and both sides' indices.
     *
     * @return the number of pairs, so the work is not eliminated.
     */
    @Benchmark
    public int indices()
    {
        computeIndices();
        return plan.indices(0, localBlocks, localIndices, remoteBlocks, remoteIndices);
    }

    /**
     * Indices, then the copies they describe, coalesced.
     *
     * @return the number of copies after coalescing.
     */
    @Benchmark
    public int indicesAndCoalescedCopies()
    {
        computeIndices();
        int count = plan.indices(0, localBlocks, localIndices, remoteBlocks, remoteIndices);
        return pairs.resolve(localList, localIndices, remoteList, remoteIndices, count, true);
    }

    private void computeIndices()
    {
        localBlocks.select(localIds).expandToKernel(1);
        remoteBlocks.select(remoteIds).expandToKernel(1);
        plan.alignBlocks(localBlocks, remoteBlocks);
    }
}
