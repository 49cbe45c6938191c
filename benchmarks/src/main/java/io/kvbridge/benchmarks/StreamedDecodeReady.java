package io.kvbridge.benchmarks;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
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
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Streamed against whole hand-off, synthetic, through the public API: the time from a request's
 * announcement ({@code prefillStarted}) to the consumer's poll reporting it received ("decode
 * ready"), with a simulated per-layer compute that grows with the prompt as a real prefill's does.
 * Per prompt length three kinds of request alternate in every round: streamed (a producer with the
 * default {@code streamMinTokens}), whole (a producer with {@code streamMinTokens} above every
 * prompt, so the request moves in one write after the last layer) and the transfer alone (whole,
 * no compute). The model is an 8B-class dense one's (Llama-3.1-8B: 32 layers, 8 KV heads of 128,
 * bfloat16, so 4 KiB per token and layer); the compute of one layer of an {@code n}-token prompt
 * is {@code (2 * 218e6 * n + 2 * n * n * 4096) / tflops} seconds (matrix products and causal
 * attention; see benchmarks/results/streaming.md for the derivation).
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp benchmarks/target/benchmarks.jar io.kvbridge.benchmarks.StreamedDecodeReady \
 *     [transports=local,tcp] [tokens=256,1024,4096,8192] [rounds=15] [warmup=3] [mode=PUSH] [tflops=450]
 * </pre>
 */
public final class StreamedDecodeReady
{
    private static final int LAYERS = 32;
    private static final int BLOCK_TOKENS = 16;
    private static final long BYTES_PER_TOKEN = 8 * 128 * 2 * 2;
    private static final long BLOCK_BYTES = BYTES_PER_TOKEN * BLOCK_TOKENS;
    // non-embedding parameters per layer and hidden size of Llama-3.1-8B
    private static final double PARAMETERS_PER_LAYER = 218e6;
    private static final double HIDDEN = 4096;
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(60);

    private static final String[] KINDS = {"streamed", "whole", "transfer"};

    private StreamedDecodeReady()
    {
    }

    /** Runs the measurement; arguments are {@code key=value} pairs (see the class comment). */
    public static void main(String[] args) throws Exception
    {
        List<String> transports = List.of(option(args, "transports", "local,tcp").split(","));
        int[] tokens = Arrays.stream(option(args, "tokens", "256,1024,4096,8192").split(",")).mapToInt(Integer::parseInt).toArray();
        int rounds = Integer.parseInt(option(args, "rounds", "15"));
        int warmup = Integer.parseInt(option(args, "warmup", "3"));
        TransferMode mode = TransferMode.valueOf(option(args, "mode", "PUSH"));
        double flops = Double.parseDouble(option(args, "tflops", "450")) * 1e12;
        int maxTokens = Arrays.stream(tokens).max().orElseThrow();
        System.out.printf(Locale.ROOT, "layers=%d, %d KiB per token and layer, %s, %d rounds after %d, %.0f TFLOP/s, default streamMinTokens=%d%n",
                LAYERS, BYTES_PER_TOKEN / 1024, mode, rounds, warmup, flops / 1e12, ConnectorSettings.DEFAULT_STREAM_MIN_TOKENS);
        for (String transport : transports) {
            try (Arena arena = Arena.ofShared(); KvBridge bridge = KvBridge.builder().transport(transport).build()) {
                ProducerConnector streamed = bridge.producer(settings("prefill-streamed", arena, maxTokens).build());
                ProducerConnector whole = bridge.producer(settings("prefill-whole", arena, maxTokens).streamMinTokens(Integer.MAX_VALUE).build());
                ConsumerConnector consumer = bridge.consumer(settings("decode", arena, maxTokens).build());
                try {
                    for (int n : tokens) {
                        measure(transport, mode, streamed, whole, consumer, n, layerNanos(n, flops), rounds, warmup);
                    }
                }
                finally {
                    consumer.close();
                    whole.close();
                    streamed.close();
                }
            }
        }
    }

    /** The simulated compute of one layer of an {@code tokens}-token prompt, in nanoseconds. */
    static long layerNanos(int tokens, double flops)
    {
        double work = 2 * PARAMETERS_PER_LAYER * tokens + 2 * (double) tokens * tokens * HIDDEN;
        return (long) (work / flops * 1e9);
    }

    private static void measure(String transport, TransferMode mode, ProducerConnector streamed, ProducerConnector whole, ConsumerConnector consumer,
            int tokens, long layerNanos, int rounds, int warmup)
    {
        // per kind: decode ready, the prefill loop's own time, and decode ready after the last layer
        long[][][] times = new long[KINDS.length][3][rounds];
        for (int round = -warmup; round < rounds; round++) {
            for (int k = 0; k < KINDS.length; k++) {
                // the order turns every round, so that no kind always follows the same one
                int kind = Math.floorMod(k + round, KINDS.length);
                long[] measured = request(kind == 0 ? streamed : whole, consumer, mode, transport + "-" + tokens + "-" + KINDS[kind] + "-" + (round + warmup),
                        tokens, kind == 2 ? 0 : layerNanos);
                if (round >= 0) {
                    for (int t = 0; t < 3; t++) {
                        times[kind][t][round] = measured[t];
                    }
                }
            }
        }
        double load = java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        long oneLayer = p(times[2][0], 50) / LAYERS;
        long bound = Math.max(p(times[0][1], 50), p(times[2][0], 50)) + oneLayer;
        System.out.printf(Locale.ROOT, "%s %s tokens=%d compute/layer=%.3f ms (%.1f ms per prefill) MiB=%d load=%.2f%n", transport, mode, tokens,
                layerNanos / 1e6, layerNanos * LAYERS / 1e6, tokens * BYTES_PER_TOKEN * LAYERS >> 20, load);
        for (int kind = 0; kind < KINDS.length; kind++) {
            System.out.printf(Locale.ROOT, "  %-8s decodeReady p50 %9.3f p90 %9.3f ms | prefill p50 %9.3f ms | after last layer p50 %8.3f p90 %8.3f ms%n", KINDS[kind],
                    p(times[kind][0], 50) / 1e6, p(times[kind][0], 90) / 1e6, p(times[kind][1], 50) / 1e6, p(times[kind][2], 50) / 1e6,
                    p(times[kind][2], 90) / 1e6);
        }
        long streamedP50 = p(times[0][0], 50);
        System.out.printf(Locale.ROOT, "  goal: streamed p50 %.3f ms <= 1.1 x (max(prefill %.3f, transfer %.3f) + one layer %.3f) = %.3f ms: %s;"
                + " streamed/whole p50 %.3f, p90 %.3f: %s%n", streamedP50 / 1e6, p(times[0][1], 50) / 1e6, p(times[2][0], 50) / 1e6, oneLayer / 1e6,
                bound * 1.1 / 1e6, streamedP50 <= bound * 1.1 ? "met" : "NOT met", (double) streamedP50 / p(times[1][0], 50),
                (double) p(times[0][0], 90) / p(times[1][0], 90), streamedP50 <= p(times[1][0], 50) ? "not slower" : "SLOWER");
    }

    /** {@return nanoseconds from the announcement to decode ready, of the prefill loop, and from the last layer to decode ready} */
    private static long[] request(ProducerConnector producer, ConsumerConnector consumer, TransferMode mode, String id, int tokens, long layerNanos)
    {
        BlockIds blocks = blocks(tokens);
        long start = System.nanoTime();
        consumer.blocksAllocated(id, producer.prefillStarted(id, blocks), mode, blocks);
        long computeUntil = start;
        for (int layer = 0; layer < LAYERS; layer++) {
            computeUntil += layerNanos;
            compute(computeUntil);
            producer.layerComputed(id, name(layer));
        }
        long last = System.nanoTime();
        producer.allLayersComputed(id);
        long deadline = last + DEADLINE_NANOS;
        while (true) {
            ReceiveBatch batch = consumer.poll();
            if (!batch.failed().isEmpty()) {
                throw new IllegalStateException("request " + id + " failed: " + batch.failed());
            }
            if (batch.received().contains(id)) {
                break;
            }
            check(deadline, "request " + id + " was not received");
            LockSupport.parkNanos(20_000);
        }
        long end = System.nanoTime();
        List<FreedRequest> freed = new ArrayList<>();
        while (freed.stream().noneMatch(f -> f.requestId().equals(id))) {
            freed.addAll(producer.poll());
            check(deadline, "request " + id + " was not freed on the producer");
            LockSupport.parkNanos(50_000);
        }
        return new long[] {end - start, last - start, end - last};
    }

    /**
     * Simulated compute, on a clock that starts at the announcement: a layer ends at its due time
     * (or at once, when the previous one overran), so that the prefill as a whole keeps to its
     * nominal time however late a single wake-up comes. Parks: on a GPU the copies do not take the compute's engine.
     */
    private static void compute(long until)
    {
        while (System.nanoTime() - until < 0) {
            LockSupport.parkNanos(Math.max(1_000, until - System.nanoTime() - 60_000));
        }
    }

    private static void check(long deadline, String what)
    {
        if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException(what + " within " + TimeUnit.NANOSECONDS.toSeconds(DEADLINE_NANOS) + " s");
        }
    }

    private static BlockIds blocks(int tokens)
    {
        int[] ids = new int[(tokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS];
        Arrays.setAll(ids, i -> i);
        return BlockIds.of(ids);
    }

    private static long p(long[] values, int percentile)
    {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * percentile / 100.0) - 1)];
    }

    private static String option(String[] args, String key, String fallback)
    {
        for (String arg : args) {
            if (arg.startsWith(key + "=")) {
                return arg.substring(key.length() + 1);
            }
        }
        return fallback;
    }

    private static ConnectorSettings.Builder settings(String name, Arena arena, int maxTokens)
    {
        return ConnectorSettings.builder(name, geometry(arena, (maxTokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS)).leaseDuration(Duration.ofMinutes(2))
                .registrationTimeout(Duration.ofMinutes(2));
    }

    private static String name(int layer)
    {
        return "model.layers." + layer + ".self_attn";
    }

    /** One region per layer of {@code capacity} blocks of 16 tokens. */
    private static CacheGeometry geometry(Arena arena, int capacity)
    {
        List<Region> regions = new ArrayList<>();
        List<Allocation> allocations = new ArrayList<>();
        for (int layer = 0; layer < LAYERS; layer++) {
            MemorySegment memory = arena.allocate(BLOCK_BYTES * capacity, 4096).fill((byte) layer);
            regions.add(new Region(name(layer), memory.address(), BLOCK_BYTES, BLOCK_BYTES, capacity, 0, MemoryKind.HOST, 0, SplitClass.SPLIT,
                    List.of(name(layer)), List.of()));
            allocations.add(Allocation.host(memory));
        }
        ModelIdentity model = new ModelIdentity("bench-streamed", "bfloat16", "bfloat16", 8, 128, LAYERS, false);
        return new CacheGeometry("per-layer", Rank.single(), model, BLOCK_TOKENS, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128)),
                allocations, regions);
    }
}
