package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The layout's own hooks applied by the connectors: its check of a peer's geometry refuses the
 * pairing at the handshake, before anything of the peer is prepared or posted; its sliding-window
 * clipping decides which blocks a request exchanges, end to end over the {@code local} transport.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class LayoutHooksTest
{
    private static final String REASON = "test layout: local blockTokens=16, peer blockTokens=32; configure the same block size on both engines";
    // PooledCache's sliding window: 512 tokens of 16-token blocks, one block more for a window starting inside a block
    private static final int WINDOW_BLOCKS = 512 / 16 + 1;

    /** A layout of the given name whose only opinion is that no peer can be paired; or, with a null reason, the SPI's defaults. */
    private static CacheLayout layout(String name, String refusal)
    {
        return new CacheLayout()
        {
            @Override
            public String name()
            {
                return name;
            }

            @Override
            public CacheGeometry describe(ModelCacheSpec spec, CacheMemory memory, Rank rank)
            {
                throw new UnsupportedOperationException("the test describes its geometries itself");
            }

            @Override
            public Optional<String> incompatibility(CacheGeometry local, CacheGeometry peer)
            {
                return Optional.ofNullable(refusal);
            }
        };
    }

    @Test
    void aConsumerLayoutThatRefusesTheProducerFailsThePullBeforeAnyListIsPreparedOrReadPosted()
    {
        CountingBackendFactory counting = new CountingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(counting, SideChannelClock.system())) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            TestCache producerCache = harness.cache(shape, Rank.single());
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b);
            TestCache consumerCache = harness.cache(shape, Rank.single());
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b.layout(layout("per-layer", REASON)));
            int allocations = producerCache.geometry.allocations().size() + consumerCache.geometry.allocations().size();
            assertEquals(allocations, counting.registrations.get(), "each rank registered its own caches at start");

            TransferParams params = producer.prefillFinished("r", ids(1, 2));
            consumer.blocksAllocated("d", params, TransferMode.PULL, ids(3, 4));
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, new ArrayList<>(), failed) != null && !failed.isEmpty(), "refused");

            ReceiveFailure failure = failed.getFirst();
            assertEquals(ErrorCode.GEOMETRY_INCOMPATIBLE, failure.code(), failure.message());
            assertTrue(failure.message().contains(REASON), failure.message());
            assertTrue(failure.message().contains("layout per-layer of consumer decode") && failure.message().contains("producer prefill rank"),
                    "names both sides: " + failure.message());
            assertEquals(ids(3, 4), failure.invalidBlocks(), "nothing was read");
            assertEquals(0, counting.preparedLists.get(), "no descriptor list of either side was prepared");
            assertEquals(0, counting.posts.get(), "no READ was posted");
            assertEquals(allocations, counting.registrations.get(), "nothing else was registered");
        }
    }

    @Test
    void aProducerLayoutThatRefusesTheConsumerTellsThePushConsumerAtOnceWithoutPreparingAnything()
    {
        CountingBackendFactory counting = new CountingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(counting, SideChannelClock.system())) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            ProducerRank producer = harness.producer("prefill", harness.cache(shape, Rank.single()), true, b -> b.layout(layout("per-layer", REASON)));
            ConsumerRank consumer = harness.consumer("decode", harness.cache(shape, Rank.single()), true, b -> b);

            TransferParams params = producer.prefillFinished("r", ids(1, 2));
            consumer.blocksAllocated("d", params, TransferMode.PUSH, ids(3, 4));
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, new ArrayList<>(), failed) != null && !failed.isEmpty(), "refused");

            assertEquals(ErrorCode.GEOMETRY_INCOMPATIBLE, failed.getFirst().code(), failed.getFirst().message());
            assertTrue(failed.getFirst().message().contains(REASON), failed.getFirst().message());
            assertEquals(0, counting.preparedLists.get(), "no descriptor list was prepared");
            assertEquals(0, counting.posts.get(), "no WRITE was posted");
        }
    }

    @Test
    void aSlidingWindowGroupExchangesOnlyItsWindowInPull()
    {
        clipsTheWindow(TransferMode.PULL);
    }

    @Test
    void aSlidingWindowGroupExchangesOnlyItsWindowInPush()
    {
        clipsTheWindow(TransferMode.PUSH);
    }

    private static void clipsTheWindow(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            int capacity = 100;
            PooledCache producerCache = new PooledCache(harness.arena, List.of(PooledCache.LAYERS), 0, capacity);
            PooledCache consumerCache = new PooledCache(harness.arena, List.of(PooledCache.LAYERS), 0, capacity);
            CacheLayout layout = layout(producerCache.geometry.layoutName(), null);
            ProducerRank producer = new ProducerRank(harness.services, settings("prefill", producerCache, layout), true);
            harness.own(producer);
            ConsumerRank consumer = new ConsumerRank(harness.services, settings("decode", consumerCache, layout), true);
            harness.own(consumer);

            // 40 blocks per group: group 0 (full attention) moves all, group 1 (window 512 tokens) only its last 33
            int blocks = 40;
            int[][] producerIds = {range(0, blocks), range(blocks, 2 * blocks)};
            int[][] consumerIds = {range(50, 50 + blocks), range(0, blocks)};
            producerCache.fill(7, producerIds);
            TransferParams params = producer.prefillFinished("r", BlockIds.of(producerIds));
            consumer.blocksAllocated("d", params, mode, BlockIds.of(consumerIds));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "received");
            assertEquals(List.of(), failed);

            int skipped = blocks - WINDOW_BLOCKS;
            int[][] exchanged = {consumerIds[0], java.util.Arrays.copyOfRange(consumerIds[1], skipped, blocks)};
            // every exchanged page holds the producer's bytes of the same position; the window's older blocks stay zero
            assertEquals(0, consumerCache.mismatches(7, exchanged, new int[] {0, skipped}), "wrong or extra bytes on the decoder");
            List<FreedRequest> freed = new ArrayList<>();
            await(() -> EngineHarness.drain(producer, freed).size() == 1, "producer freed");
            assertEquals(new FreedRequest("r", FreeReason.COMPLETED), freed.getFirst());
        }
    }

    private static ConnectorSettings settings(String engineId, PooledCache cache, CacheLayout layout)
    {
        return ConnectorSettings.builder(engineId, cache.geometry).cacheSpec(cache.spec).layout(layout).build();
    }

    private static int[] range(int from, int to)
    {
        return IntStream.range(from, to).toArray();
    }
}
