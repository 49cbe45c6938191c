package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.FreedRequest;
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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The measurement behind {@code ConnectorSettings.DEFAULT_STREAM_MIN_TOKENS} (benchmarks/results/streaming.md):
 * for requests of growing size, the time from a request's announcement to the decoder having it all
 * ("decode ready"), streamed layer by layer and moved whole, over the {@code local} transport with a
 * simulated compute time per layer. Off by default; run with {@code -Dkvbridge.measure=true}.
 */
@EnabledIfSystemProperty(named = "kvbridge.measure", matches = "true")
final class LayerStreamingMeasurement
{
    private static final int LAYERS = 16;
    private static final int BLOCK_TOKENS = 16;
    // 8 KV heads of 128 values, K and V, bfloat16: 4 KiB per token and layer
    private static final long BYTES_PER_TOKEN = 8 * 128 * 2 * 2;
    private static final int MAX_TOKENS = 2048;
    private static final long COMPUTE_NANOS = Long.getLong("kvbridge.measure.layerNanos", 100_000L);
    private static final int ROUNDS = Integer.getInteger("kvbridge.measure.rounds", 40);

    @Test
    void decodeReadyStreamedAgainstWhole()
    {
        try (EngineHarness harness = new EngineHarness(); Arena arena = Arena.ofShared()) {
            CacheGeometry producerGeometry = geometry(arena);
            CacheGeometry consumerGeometry = geometry(arena);
            ProducerRank streamed = new ProducerRank(harness.services, io.kvbridge.api.ConnectorSettings.builder("p-streamed", producerGeometry)
                    .streamMinTokens(0).build(), true);
            ProducerRank whole = new ProducerRank(harness.services, io.kvbridge.api.ConnectorSettings.builder("p-whole", geometry(arena))
                    .streamMinTokens(Integer.MAX_VALUE).build(), true);
            ConsumerRank consumer = new ConsumerRank(harness.services, io.kvbridge.api.ConnectorSettings.builder("d", consumerGeometry).build(), true);
            harness.own(streamed);
            harness.own(whole);
            harness.own(consumer);
            System.out.printf(Locale.ROOT, "layers=%d compute/layer=%d us, %d KiB per token and layer, %d rounds%n", LAYERS, COMPUTE_NANOS / 1000,
                    BYTES_PER_TOKEN / 1024, ROUNDS);
            System.out.println("tokens  streamed p50/p90 us  whole p50/p90 us  (decode ready after the last layer: streamed p50, whole p50)");
            int serial = 0;
            for (int tokens : new int[] {16, 32, 64, 128, 256, 512, 1024, 2048}) {
                long[][] times = new long[4][ROUNDS];
                for (int round = -5; round < ROUNDS; round++) {
                    for (int side = 0; side < 2; side++) {
                        long[] measured = run(side == 0 ? streamed : whole, consumer, "r" + serial++, tokens);
                        if (round >= 0) {
                            times[side][round] = measured[0];
                            times[side + 2][round] = measured[1];
                        }
                    }
                }
                for (long[] series : times) {
                    Arrays.sort(series);
                }
                System.out.printf(Locale.ROOT, "%6d  %8d / %8d      %8d / %8d     (%d, %d)%n", tokens, p(times[0], 50), p(times[0], 90), p(times[1], 50),
                        p(times[1], 90), p(times[2], 50), p(times[3], 50));
            }
        }
    }

    /** {@return nanoseconds from the announcement, and from the last layer, to the decoder's report} */
    private static long[] run(ProducerRank producer, ConsumerRank consumer, String id, int tokens)
    {
        int blocks = (tokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
        int[] ids = new int[blocks];
        Arrays.setAll(ids, i -> i);
        long start = System.nanoTime();
        consumer.blocksAllocated(id, producer.prefillStarted(id, BlockIds.of(ids)), TransferMode.PUSH, BlockIds.of(ids));
        for (int layer = 0; layer < LAYERS; layer++) {
            compute(tokens);
            producer.layerComputed(id, name(layer));
        }
        long last = System.nanoTime();
        producer.allLayersComputed(id);
        while (true) {
            ReceiveBatch batch = consumer.poll();
            assertEquals(List.of(), batch.failed());
            if (!batch.received().isEmpty()) {
                break;
            }
            Thread.onSpinWait();
        }
        long end = System.nanoTime();
        List<FreedRequest> freed = new ArrayList<>();
        EngineHarness.await(() -> EngineHarness.drain(producer, freed).size() == 1, "freed");
        return new long[] {end - start, end - last};
    }

    /** Simulated compute of one layer: proportional to the tokens, as a prefill's is. */
    private static void compute(int tokens)
    {
        long until = System.nanoTime() + COMPUTE_NANOS * tokens / MAX_TOKENS;
        while (System.nanoTime() - until < 0) {
            LockSupport.parkNanos(10_000);
        }
    }

    private static long p(long[] sorted, int percentile)
    {
        return sorted[Math.min(sorted.length - 1, sorted.length * percentile / 100)] / 1000;
    }

    private static String name(int layer)
    {
        return "model.layers." + layer + ".self_attn";
    }

    private static CacheGeometry geometry(Arena arena)
    {
        long blockBytes = BYTES_PER_TOKEN * BLOCK_TOKENS;
        int capacity = MAX_TOKENS / BLOCK_TOKENS;
        ModelIdentity identity = new ModelIdentity("measure/streaming", "bfloat16", "bfloat16", 8, (int) (blockBytes / 8 / 2), LAYERS, false);
        List<Allocation> allocations = new ArrayList<>();
        List<Region> regions = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            MemorySegment segment = arena.allocate(blockBytes * capacity, 64);
            allocations.add(new Allocation(segment.address(), segment.byteSize(), MemoryKind.HOST, 0));
            regions.add(new Region(name(l), segment.address(), blockBytes, blockBytes, capacity, 0, MemoryKind.HOST, 0, SplitClass.SPLIT,
                    List.of(name(l)), List.of()));
        }
        return new CacheGeometry("per-layer", Rank.single(), identity, BLOCK_TOKENS, 1,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, (int) (blockBytes / 8 / 2))), allocations, regions);
    }
}
