package io.kvbridge.core.benchmarks;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.TransferMode;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The per-layer hooks of a streamed hand-off, through the public API on {@code local}: the
 * producer's {@code layerComputed} on an announced request (called from an engine's forward pass)
 * and the consumer's {@code layerLoaded} (asked by a decoder before it reads a layer). Both must
 * allocate nothing per call; run with {@code -prof gc} and read {@code gc.alloc.rate.norm}.
 * The model is an 8B-class one's: 32 layers of 8 KV heads of 128, bfloat16.
 *
 * <p>A layer can be announced once per request, so {@link #layerComputed} runs as single shots of
 * {@value #REQUESTS_PER_ITERATION} requests x {@value #LAYERS} layers, each iteration on requests of
 * its own, all announced in the trial's setup. A single shot's figures are per batch: divide time
 * and {@code gc.alloc.rate.norm} by the batch ({@value #REQUESTS_PER_ITERATION} x {@value #LAYERS}
 * calls). JMH counts the allocation of every thread, so the producer's worker, which each call
 * wakes, counts too.
 */
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class LayerHooksBenchmark
{
    static final int LAYERS = 32;
    static final int REQUESTS_PER_ITERATION = 500;
    static final int WARM_UP = 10;
    static final int ITERATIONS = WARM_UP + 20;
    private static final int BLOCK_BYTES = 16 * 8 * 128 * 2 * 2;
    private static final int CAPACITY = 64;

    /**
     * A producer with every request the trial's iterations announce layers of, announced in the
     * trial's setup: setup work inside an iteration would count in its allocation figures.
     */
    @State(Scope.Thread)
    public static class Announced
    {
        private Arena arena;
        private KvBridge bridge;
        private ProducerConnector producer;
        final String[] layers = layerNames();
        final String[] requests = new String[REQUESTS_PER_ITERATION * ITERATIONS];
        int call;

        /** Opens the producer and announces the requests. */
        @Setup(Level.Trial)
        public void open()
        {
            arena = Arena.ofShared();
            bridge = KvBridge.builder().transport("local").build();
            producer = bridge.producer(ConnectorSettings.builder("bench-prefill", geometry(arena)).streamMinTokens(0)
                    .leaseDuration(Duration.ofMinutes(10)).build());
            for (int r = 0; r < requests.length; r++) {
                requests[r] = "hooks-" + r;
                producer.prefillStarted(requests[r], BlockIds.of(new int[] {r % CAPACITY}));
            }
        }

        /** Ends the requests and closes the producer. */
        @TearDown(Level.Trial)
        public void close()
        {
            for (String request : requests) {
                producer.abort(request);
            }
            producer.close();
            bridge.close();
            arena.close();
        }
    }

    /** A consumer receiving a pushed, streamed request whose first layer landed and whose second did not. */
    @State(Scope.Thread)
    public static class Receiving
    {
        private Arena arena;
        private KvBridge bridge;
        private ProducerConnector producer;
        private ConsumerConnector consumer;
        String first;
        String second;
        boolean toggle;

        /** Streams the request's first layer and waits (up to 30 s) until the consumer says it loaded. */
        @Setup(Level.Trial)
        public void open()
        {
            arena = Arena.ofShared();
            bridge = KvBridge.builder().transport("local").build();
            producer = bridge.producer(ConnectorSettings.builder("bench-prefill", geometry(arena)).streamMinTokens(0)
                    .leaseDuration(Duration.ofMinutes(10)).build());
            consumer = bridge.consumer(ConnectorSettings.builder("bench-decode", geometry(arena)).registrationTimeout(Duration.ofMinutes(10)).build());
            String[] layers = layerNames();
            first = layers[0];
            second = layers[1];
            consumer.blocksAllocated("d-hooks", producer.prefillStarted("p-hooks", BlockIds.of(new int[] {0})), TransferMode.PUSH, BlockIds.of(new int[] {1}));
            producer.layerComputed("p-hooks", first);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!consumer.layerLoaded("d-hooks", first)) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("layer " + first + " of request d-hooks did not load within 30 s");
                }
                LockSupport.parkNanos(100_000);
            }
        }

        /** Closes both connectors. */
        @TearDown(Level.Trial)
        public void close()
        {
            consumer.close();
            producer.close();
            bridge.close();
            arena.close();
        }
    }

    /**
     * One {@code layerComputed} per operation, on the next layer of the next announced request.
     *
     * @return the call's number, so that it is consumed.
     */
    @Benchmark
    @BenchmarkMode(Mode.SingleShotTime)
    @Warmup(iterations = WARM_UP, batchSize = REQUESTS_PER_ITERATION * LAYERS)
    @Measurement(iterations = ITERATIONS - WARM_UP, batchSize = REQUESTS_PER_ITERATION * LAYERS)
    public int layerComputed(Announced state)
    {
        int call = state.call++;
        state.producer.layerComputed(state.requests[call / LAYERS], state.layers[call % LAYERS]);
        return call;
    }

    /**
     * The control of {@link #layerComputed}: the same single shots with the same requests announced
     * and no call, so that what the JVM's and the connector's own threads allocate meanwhile shows.
     *
     * @return the call's number, so that it is consumed.
     */
    @Benchmark
    @BenchmarkMode(Mode.SingleShotTime)
    @Warmup(iterations = WARM_UP, batchSize = REQUESTS_PER_ITERATION * LAYERS)
    @Measurement(iterations = ITERATIONS - WARM_UP, batchSize = REQUESTS_PER_ITERATION * LAYERS)
    public int noCall(Announced state)
    {
        return state.call++;
    }

    /**
     * Two {@code layerLoaded} per invocation: a layer that landed and one that did not.
     *
     * @return whether the answers were the expected ones, so that they are consumed.
     */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OperationsPerInvocation(2)
    @Warmup(iterations = 3, time = 1)
    @Measurement(iterations = 5, time = 1)
    public boolean layerLoaded(Receiving state)
    {
        return state.consumer.layerLoaded("d-hooks", state.first) & !state.consumer.layerLoaded("d-hooks", state.second);
    }

    private static String[] layerNames()
    {
        String[] names = new String[LAYERS];
        for (int l = 0; l < LAYERS; l++) {
            names[l] = "model.layers." + l + ".self_attn";
        }
        return names;
    }

    /** One region per layer, {@value #CAPACITY} blocks of 16 tokens each. */
    private static CacheGeometry geometry(Arena arena)
    {
        List<Region> regions = new ArrayList<>();
        List<Allocation> allocations = new ArrayList<>();
        for (String name : layerNames()) {
            MemorySegment memory = arena.allocate((long) BLOCK_BYTES * CAPACITY, 4096);
            regions.add(new Region(name, memory.address(), BLOCK_BYTES, BLOCK_BYTES, CAPACITY, 0, MemoryKind.HOST, 0, SplitClass.SPLIT, List.of(name),
                    List.of()));
            allocations.add(Allocation.host(memory));
        }
        ModelIdentity model = new ModelIdentity("bench-layer-hooks", "bfloat16", "bfloat16", 8, 128, LAYERS, false);
        return new CacheGeometry("per-layer", Rank.single(), model, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128)),
                allocations, regions);
    }
}
