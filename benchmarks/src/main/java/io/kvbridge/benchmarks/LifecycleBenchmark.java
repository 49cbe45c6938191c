package io.kvbridge.benchmarks;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Requests through the whole lifecycle on {@code local}, through the public API: a producer
 * connector finishes a prefill, a consumer connector receives it (push or pull), and the operation
 * ends when the consumer reported it received and the producer reported its blocks free. At most
 * {@code concurrency} requests are in flight. Each request moves {@value #BLOCKS} blocks of each of
 * {@value #LAYERS} layers: 8 KiB per request with 256-byte blocks (lifecycle overhead), 1 MiB with
 * 32 KiB blocks (data path). Scores are requests per second; GB/s = score x bytes per request.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx1g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
public class LifecycleBenchmark
{
    static final int LAYERS = 4;
    static final int BLOCKS = 8;
    private static final int REQUESTS = 128;
    private static final int MAX_CONCURRENCY = 64;

    @Param({"PULL", "PUSH"})
    public TransferMode mode;

    @Param({"1", "8", "64"})
    public int concurrency;

    @Param({"256", "32768"})
    public int blockBytes;

    private Arena arena;
    private KvBridge bridge;
    private ProducerConnector producer;
    private ConsumerConnector consumer;
    private long next;

    private record InFlight(int slot, boolean[] done)
    {
    }

    @Setup(Level.Trial)
    public void setUp()
    {
        arena = Arena.ofShared();
        bridge = KvBridge.builder().transport("local").build();
        producer = bridge.producer(ConnectorSettings.builder("bench-prefill", geometry(arena, blockBytes)).build());
        consumer = bridge.consumer(ConnectorSettings.builder("bench-decode", geometry(arena, blockBytes)).build());
    }

    private static CacheGeometry geometry(Arena arena, int blockBytes)
    {
        int capacity = MAX_CONCURRENCY * BLOCKS;
        List<Region> regions = new ArrayList<>();
        List<Allocation> allocations = new ArrayList<>();
        for (int layer = 0; layer < LAYERS; layer++) {
            MemorySegment memory = arena.allocate((long) blockBytes * capacity, 4096).fill((byte) layer);
            String name = "model.layers." + layer + ".self_attn";
            regions.add(new Region(name, memory.address(), blockBytes, blockBytes, capacity, 0, MemoryKind.HOST, 0, SplitClass.SPLIT, List.of(name),
                    List.of()));
            allocations.add(Allocation.host(memory));
        }
        ModelIdentity model = new ModelIdentity("bench-lifecycle", "bfloat16", "bfloat16", 8, 128, LAYERS, false);
        return new CacheGeometry("per-layer", Rank.single(), model, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128)),
                allocations, regions);
    }

    private static BlockIds slotBlocks(int slot)
    {
        int[] ids = new int[BLOCKS];
        for (int i = 0; i < BLOCKS; i++) {
            ids[i] = slot * BLOCKS + i;
        }
        return BlockIds.of(ids);
    }

    @Benchmark
    @OperationsPerInvocation(REQUESTS)
    public int requests()
    {
        ArrayDeque<Integer> free = new ArrayDeque<>();
        for (int slot = 0; slot < concurrency; slot++) {
            free.add(slot);
        }
        Map<String, InFlight> producerIds = new HashMap<>();
        Map<String, InFlight> consumerIds = new HashMap<>();
        int issued = 0;
        int finished = 0;
        while (finished < REQUESTS) {
            boolean progress = false;
            while (issued < REQUESTS && !free.isEmpty()) {
                int slot = free.poll();
                long id = next++;
                InFlight request = new InFlight(slot, new boolean[2]);
                producerIds.put("p" + id, request);
                consumerIds.put("d" + id, request);
                TransferParams params = producer.prefillFinished("p" + id, slotBlocks(slot));
                consumer.blocksAllocated("d" + id, params, mode, slotBlocks(slot));
                issued++;
                progress = true;
            }
            ReceiveBatch batch = consumer.poll();
            if (!batch.failed().isEmpty()) {
                throw new IllegalStateException("request failed: " + batch.failed().getFirst());
            }
            for (String id : batch.received()) {
                finished += complete(consumerIds.remove(id), 0, free);
                progress = true;
            }
            for (FreedRequest freed : producer.poll()) {
                finished += complete(producerIds.remove(freed.requestId()), 1, free);
                progress = true;
            }
            if (!progress) {
                LockSupport.parkNanos(10_000);
            }
        }
        return finished;
    }

    private static int complete(InFlight request, int side, ArrayDeque<Integer> free)
    {
        request.done()[side] = true;
        if (request.done()[0] && request.done()[1]) {
            free.add(request.slot());
            return 1;
        }
        return 0;
    }

    @TearDown(Level.Trial)
    public void tearDown()
    {
        producer.close();
        consumer.close();
        bridge.close();
        arena.close();
    }
}
