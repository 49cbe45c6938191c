package io.kvbridge.benchmarks;

import io.kvbridge.api.KvBridge;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@code local} WRITE throughput: one operation streams 1 GiB from one allocation into another in
 * {@code blockBytes} descriptors, posted as transfers of {@code blocksPerTransfer} blocks with up to
 * 8 in flight. GB/s = 1.073741824 / (seconds per operation). The baseline in the same run is
 * {@code examples/src/main/resources/io/kvbridge/examples/bench/memcpy_stream.c} (single-thread glibc memcpy over the same 1 GiB).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx2g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class LocalTransportBenchmark
{
    private static final long STREAM_BYTES = 1L << 30;
    private static final int WINDOW = 8;

    @Param({"32768"})
    public int blockBytes;

    @Param({"1", "2"})
    public int copyThreads;

    @Param({"64", "32768"})
    public int blocksPerTransfer;

    private static final byte[] GRANT_KEY = {'j', 'm', 'h'};

    private Arena arena;
    private KvBridge producerEngine;
    private KvBridge consumerEngine;
    private TransferBackend producer;
    private PreparedList local;
    private PreparedList remote;
    private int[][] indices;
    private long[] window;
    // refilled for every post: posting allocates nothing
    private final TransferRequest request = new TransferRequest();

    @Setup(Level.Trial)
    public void setUp()
    {
        arena = Arena.ofShared();
        MemorySegment source = arena.allocate(STREAM_BYTES, 4096).fill((byte) 1);
        MemorySegment destination = arena.allocate(STREAM_BYTES, 4096).fill((byte) 2);
        Map<String, String> config = Map.of("copy-threads", Integer.toString(copyThreads));
        producerEngine = KvBridge.builder().transport("local").transportConfig(config).build();
        consumerEngine = KvBridge.builder().transport("local").build();
        producer = producerEngine.transport();
        TransferBackend consumer = consumerEngine.transport();
        producer.register(Allocation.host(source));
        consumer.register(Allocation.host(destination));
        int blocks = (int) (STREAM_BYTES / blockBytes);
        local = producer.prepareLocal(blocksOf(source, blocks));
        remote = producer.prepareRemote(producer.connect(consumer.localMetadata()), blocksOf(destination, blocks));
        // the consumer grants its whole destination, as an engine grants a request's blocks
        int[] all = new int[blocks];
        java.util.Arrays.setAll(all, i -> i);
        PreparedList granted = consumer.prepareLocal(blocksOf(destination, blocks));
        consumer.grant(GRANT_KEY, TransferOp.WRITE, granted, all, blocks);
        consumer.releasePrepared(granted);
        int transfers = blocks / blocksPerTransfer;
        indices = new int[transfers][blocksPerTransfer];
        for (int t = 0; t < transfers; t++) {
            for (int b = 0; b < blocksPerTransfer; b++) {
                indices[t][b] = t * blocksPerTransfer + b;
            }
        }
        window = new long[WINDOW];
    }

    private DescriptorList blocksOf(MemorySegment segment, int blocks)
    {
        DescriptorList.Builder list = DescriptorList.builder(MemoryKind.HOST, 0, blocks);
        for (int b = 0; b < blocks; b++) {
            list.add(segment.address() + (long) b * blockBytes, blockBytes);
        }
        return list.build();
    }

    @Benchmark
    public int writeOneGibibyte()
    {
        int posted = 0;
        int completed = 0;
        while (completed < indices.length) {
            while (posted < indices.length && posted - completed < WINDOW) {
                int[] ids = indices[posted];
                window[posted % WINDOW] = producer.post(request.start(TransferOp.WRITE).local(local, ids).remote(remote, ids).count(ids.length)
                        .grantKey(GRANT_KEY));
                posted++;
            }
            long handle = window[completed % WINDOW];
            TransferStatus status = producer.status(handle);
            if (status.terminal()) {
                if (status != TransferStatus.DONE) {
                    throw new IllegalStateException("transfer failed: " + producer.failure(handle));
                }
                producer.release(handle);
                completed++;
            }
            else {
                // yield, not park: a parked poller wakes no sooner than the kernel's timer slack (50 us),
                // which the stream would measure; yielding still leaves the core to a copy thread that needs it
                Thread.yield();
            }
        }
        return completed;
    }

    @TearDown(Level.Trial)
    public void tearDown()
    {
        producerEngine.close();
        consumerEngine.close();
        arena.close();
    }
}
