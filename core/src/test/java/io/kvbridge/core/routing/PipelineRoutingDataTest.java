package io.kvbridge.core.routing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.TransferMode;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.testkit.PooledBlockIds;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Moves the KV of a 30-layer hybrid model between engines split into different pipeline stages,
 * with the real {@code hma} layout found the way an engine finds it and host memory from an
 * {@link Arena}, without a transport: each plan's descriptor pairs are applied as plain copies.
 * Every page of the producer holds bytes that encode (layer, request block, byte offset); after a
 * request the decoder must hold each layer's blocks in the pool that holds that layer, at the
 * decoder's block ids, and every other byte of either engine must be unchanged. The layout plugins
 * are test dependencies of core only: core's main code never names one.
 */
final class PipelineRoutingDataTest
{
    private static final int LAYERS = 30;
    private static final int BLOCK_TOKENS = 4;
    private static final int PRODUCER_CAPACITY = 40;
    private static final int DECODER_CAPACITY = 32;
    private static final int REQUESTS = 50;
    private static final List<CacheGroup> GROUPS = List.of(
            new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 8),
            new CacheGroup(1, GroupKind.SLIDING_WINDOW, 64, 2, 8));
    private static final ModelIdentity MODEL = new ModelIdentity("hybrid-30", "bfloat16", "bfloat16", 2, 8, LAYERS, true);
    /** Every third layer is full attention, the others sliding window: pools mix both groups. */
    private static final List<LayerSpec> MODEL_LAYERS = layers();

    private final CacheLayout hma = PluginRegistry.discover(getClass().getClassLoader()).layout("hma").create(Map.of());

    private static List<LayerSpec> layers()
    {
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < LAYERS; i++) {
            layers.add(new LayerSpec("model.layers." + i + ".self_attn", i % 3 == 2 ? 0 : 1));
        }
        return List.copyOf(layers);
    }

    @Test
    void twoProducerStagesPushIntoADecoderWithoutPipelineParallelism()
    {
        try (Arena arena = Arena.ofConfined()) {
            Engine producer = engine(List.of(15, 15), PRODUCER_CAPACITY, arena);
            Engine decoder = engine(List.of(30), DECODER_CAPACITY, arena);
            CacheGeometry whole = decoder.stages().getFirst();
            List<List<String>> decoderPools = whole.regions().stream().map(Region::members).toList();
            List<TransferPlan> plans = new ArrayList<>();
            for (CacheGeometry stage : producer.stages()) {
                assertEquals(Optional.empty(), hma.incompatibility(stage, whole));
                assertTrue(stage.regions().stream().anyMatch(region -> !decoderPools.contains(region.members())),
                        "the stage pools its layers differently from the decoder");
                Route route = Routing.route(MODEL_LAYERS, stage, whole);
                assertEquals(RoutingMode.BY_LAYER_NAME, route.mode());
                assertEquals(15, route.entries().size());
                plans.add(Routing.plan(MODEL_LAYERS, stage, whole, TransferMode.PUSH));
            }
            List<Pair> pairs = List.of(new Pair(0, 0, plans.get(0)), new Pair(1, 0, plans.get(1)));
            pushRequests(producer, decoder, pairs, new Random(1));
        }
    }

    @Test
    void twoProducerStagesPushIntoTwoDecoderStagesWithOtherBoundaries()
    {
        try (Arena arena = Arena.ofConfined()) {
            Engine producer = engine(List.of(15, 15), PRODUCER_CAPACITY, arena);
            Engine decoder = engine(List.of(10, 20), DECODER_CAPACITY, arena);
            StageExchange exchange = StageExchange.route(MODEL_LAYERS, producer.stages(), decoder.stages(), TransferMode.PUSH);
            assertEquals(List.of(1, 2), List.of(exchange.expectedWriteNotifications(0), exchange.expectedWriteNotifications(1)));
            pushRequests(producer, decoder, pairs(exchange, producer, decoder), new Random(2));
        }
    }

    @Test
    void threeProducerStagesPushIntoTwoDecoderStages()
    {
        try (Arena arena = Arena.ofConfined()) {
            Engine producer = engine(List.of(10, 10, 10), PRODUCER_CAPACITY, arena);
            Engine decoder = engine(List.of(15, 15), DECODER_CAPACITY, arena);
            StageExchange exchange = StageExchange.route(MODEL_LAYERS, producer.stages(), decoder.stages(), TransferMode.PUSH);
            assertEquals(List.of(2, 2), List.of(exchange.expectedWriteNotifications(0), exchange.expectedWriteNotifications(1)));
            pushRequests(producer, decoder, pairs(exchange, producer, decoder), new Random(3));
        }
    }

    /** A plan and the stages it connects. */
    private record Pair(int producerStage, int decoderStage, TransferPlan plan)
    {
    }

    private static List<Pair> pairs(StageExchange exchange, Engine producer, Engine decoder)
    {
        List<Pair> pairs = new ArrayList<>();
        for (int p = 0; p < producer.stages().size(); p++) {
            for (int d : exchange.decodersOf(p)) {
                pairs.add(new Pair(p, d, exchange.plan(p, d)));
            }
        }
        return pairs;
    }

    /** The stages of one engine and the host memory behind them, by address. */
    private record Engine(ModelCacheSpec spec, List<CacheGeometry> stages, TreeMap<Long, MemorySegment> memory)
    {
        MemorySegment at(long address, long length)
        {
            Map.Entry<Long, MemorySegment> home = memory.floorEntry(address);
            return home.getValue().asSlice(address - home.getKey(), length);
        }

        /** Copies all memory, in address order. */
        List<byte[]> snapshot()
        {
            return memory.values().stream().map(segment -> segment.toArray(ValueLayout.JAVA_BYTE)).toList();
        }
    }

    /** Describes every stage with the hma layout over pools allocated the way its allocator pools (layer i of each group in pool i). */
    private Engine engine(List<Integer> stageLayerCounts, int capacity, Arena arena)
    {
        ModelCacheSpec spec = new ModelCacheSpec(MODEL, BLOCK_TOKENS, 1, GROUPS, MODEL_LAYERS, stageLayerCounts);
        long pageBytes = 2L * BLOCK_TOKENS * 2 * 8 * 2;
        List<CacheGeometry> stages = new ArrayList<>();
        TreeMap<Long, MemorySegment> memory = new TreeMap<>();
        for (int s = 0; s < stageLayerCounts.size(); s++) {
            Rank rank = new Rank(s, stageLayerCounts.size(), 0, 1);
            int[] perGroup = new int[GROUPS.size()];
            spec.layersOwnedBy(rank).forEach(layer -> perGroup[layer.groupId()]++);
            int pools = Math.max(perGroup[0], perGroup[1]);
            List<Allocation> allocations = new ArrayList<>();
            for (int p = 0; p < pools; p++) {
                MemorySegment pool = arena.allocate(capacity * pageBytes, 64);
                memory.put(pool.address(), pool);
                allocations.add(Allocation.host(pool));
            }
            stages.add(hma.describe(spec, CacheMemory.of(allocations), rank));
        }
        return new Engine(spec, stages, memory);
    }

    private static void pushRequests(Engine producer, Engine decoder, List<Pair> pairs, Random random)
    {
        DescriptorPairs copies = new DescriptorPairs(0);
        for (int request = 0; request < REQUESTS; request++) {
            int[] counts = {1 + random.nextInt(6), 1 + random.nextInt(6)};
            int[][] producerIds = PooledBlockIds.allocate(counts, PRODUCER_CAPACITY, random);
            int[][] decoderIds = PooledBlockIds.allocate(counts, DECODER_CAPACITY, random);
            fill(producer, producerIds, request, random);
            fillRandom(decoder, random);
            List<byte[]> producerBefore = producer.snapshot();
            List<byte[]> expected = expectedDecoder(decoder, decoderIds, request);

            BlockSelection local = BlockSelection.of(producerIds);
            BlockSelection remote = BlockSelection.of(decoderIds);
            for (Pair pair : pairs) {
                TransferPlan plan = pair.plan();
                DescriptorList localList = plan.localDescriptors(0);
                DescriptorList remoteList = plan.remoteDescriptors(decoder.stages().get(pair.decoderStage()));
                int count = plan.indexCount(0, local);
                int[] localIndices = new int[count];
                int[] remoteIndices = new int[count];
                plan.indices(0, local, localIndices, remote, remoteIndices);
                copies.resolve(localList, localIndices, remoteList, remoteIndices, count, request % 2 == 0);
                for (int i = 0; i < copies.size(); i++) {
                    long length = copies.length(i);
                    MemorySegment.copy(producer.at(copies.localAddress(i), length), 0, decoder.at(copies.remoteAddress(i), length), 0, length);
                }
            }
            List<byte[]> actual = decoder.snapshot();
            for (int s = 0; s < expected.size(); s++) {
                assertArrayEquals(expected.get(s), actual.get(s), "request " + request + ": decoder pool " + s + " differs");
            }
            List<byte[]> producerAfter = producer.snapshot();
            for (int s = 0; s < producerBefore.size(); s++) {
                assertArrayEquals(producerBefore.get(s), producerAfter.get(s), "the producer's memory is only read");
            }
        }
    }

    /** Writes every page of the request with its content, every other page with noise. */
    private static void fill(Engine engine, int[][] ids, int request, Random random)
    {
        fillRandom(engine, random);
        forEachRequestPage(engine, ids, (page, layer, block) -> encode(page, request, layer, block));
    }

    private static void fillRandom(Engine engine, Random random)
    {
        for (MemorySegment segment : engine.memory().values()) {
            byte[] noise = new byte[(int) segment.byteSize()];
            random.nextBytes(noise);
            MemorySegment.copy(noise, 0, segment, ValueLayout.JAVA_BYTE, 0, noise.length);
        }
    }

    /** Returns the decoder's memory as it must be after the request: its current bytes, with each layer's blocks at the decoder's ids. */
    private static List<byte[]> expectedDecoder(Engine decoder, int[][] ids, int request)
    {
        List<byte[]> before = decoder.snapshot();
        forEachRequestPage(decoder, ids, (page, layer, block) -> encode(page, request, layer, block));
        List<byte[]> expected = decoder.snapshot();
        List<Long> bases = new ArrayList<>(decoder.memory().keySet());
        for (int s = 0; s < bases.size(); s++) {
            MemorySegment.copy(before.get(s), 0, decoder.memory().get(bases.get(s)), ValueLayout.JAVA_BYTE, 0, before.get(s).length);
        }
        return expected;
    }

    @FunctionalInterface
    private interface PageAction
    {
        void apply(MemorySegment page, int layer, int block);
    }

    /** Visits every page that holds a request block: page ids[g][j] of every pool holding a layer of group g. */
    private static void forEachRequestPage(Engine engine, int[][] ids, PageAction action)
    {
        for (CacheGeometry stage : engine.stages()) {
            for (Region pool : stage.regions()) {
                for (String member : pool.members()) {
                    int layer = engine.spec().layers().indexOf(engine.spec().layers().stream().filter(spec -> spec.name().equals(member)).findFirst().orElseThrow());
                    int group = engine.spec().layers().get(layer).groupId();
                    for (int j = 0; j < ids[group].length; j++) {
                        action.apply(engine.at(pool.blockAddress(ids[group][j]), pool.blockBytes()), layer, j);
                    }
                }
            }
        }
    }

    /** Byte k of request block j of a layer: a mix of all four, so a page in the wrong place cannot match. */
    private static void encode(MemorySegment page, int request, int layer, int block)
    {
        for (int k = 0; k < page.byteSize(); k++) {
            int h = request * 0x9E3779B1 + layer * 0x85EBCA6B + block * 0xC2B2AE35 + k * 0x27D4EB2F;
            h ^= h >>> 15;
            h *= 0x2C1B3C6D;
            h ^= h >>> 12;
            page.set(ValueLayout.JAVA_BYTE, k, (byte) h);
        }
    }
}
