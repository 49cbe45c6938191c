package io.kvbridge.core.benchmarks;

import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.DescriptorList;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Building the remote descriptor list of one producer rank for a 32B-class model: 64 layers of
 * 101,563 blocks, 6,500,032 descriptors (the size that took 1.1 s as Python tuples and 112 ms with
 * NumPy in the reference connector). Target: under 30 ms. The trial setup prints how many copies
 * a transfer of the whole cache coalesces to.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xms4g", "-Xmx4g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class RemoteDescriptorListBenchmark
{
    private static final int LAYERS = 64;
    private static final int BLOCKS = 101_563;

    /** Consumer TP size reading a TP 1 producer: 1 moves whole blocks, 2 head slices. */
    @Param({"1", "2"})
    public int consumerTp;

    private TransferPlan plan;
    private CacheGeometry producer;

    /** Builds the plan once and reports the coalesced size of a whole-cache transfer. */
    @Setup
    public void setUp()
    {
        CacheGeometry consumer = UniformCaches.describe(LAYERS, 0, consumerTp, 65_536, BLOCKS, 0x10_0000_0000L);
        producer = UniformCaches.describe(LAYERS, 0, 1, 65_536, BLOCKS, 0x900_0000_0000L);
        plan = TransferPlan.pair(consumer, producer);
        DescriptorList remote = plan.remoteDescriptors(producer);
        DescriptorList local = plan.localDescriptors(0);
        int[] identity = new int[remote.size()];
        for (int i = 0; i < identity.length; i++) {
            identity[i] = i;
        }
        DescriptorPairs pairs = new DescriptorPairs(0);
        int plain = pairs.resolve(local, identity, remote, identity, identity.length, false);
        int coalesced = pairs.resolve(local, identity, remote, identity, identity.length, true);
        System.out.printf(java.util.Locale.ROOT, "%nconsumerTp=%d: remote list %,d descriptors; whole-cache transfer %,d pairs -> %,d coalesced copies%n",
                consumerTp, remote.size(), plain, coalesced);
    }

    /**
     * Builds the list.
     *
     * @return the list, consumed by JMH.
     */
    @Benchmark
    public DescriptorList build()
    {
        return plan.remoteDescriptors(producer);
    }
}
