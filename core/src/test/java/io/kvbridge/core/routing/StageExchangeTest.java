package io.kvbridge.core.routing;

import static io.kvbridge.core.routing.Stage.hybrid;
import static io.kvbridge.core.routing.Stage.hybridSpec;
import static io.kvbridge.core.routing.Stage.layers;
import static io.kvbridge.core.routing.Stage.name;
import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.TransferMode;
import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.SplitClass;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

final class StageExchangeTest
{
    /** Every third layer is full attention (group 0), the others sliding window (group 1). */
    private static final List<LayerSpec> LAYERS = layers(30, i -> i % 3 == 2 ? 0 : 1);

    /** One geometry per stage of an engine split as given, each stage's pools at its own base. */
    private static List<CacheGeometry> engine(List<Integer> stageLayerCounts, int tpSize, long base)
    {
        ModelCacheSpec spec = hybridSpec(LAYERS, stageLayerCounts);
        long pageBytes = 4096L / tpSize;
        List<CacheGeometry> stages = new ArrayList<>();
        for (int s = 0; s < stageLayerCounts.size(); s++) {
            stages.add(hybrid(spec, new Rank(s, stageLayerCounts.size(), 0, tpSize), base + s * 0x1000_0000L, pageBytes));
        }
        return stages;
    }

    private static List<String> names(int from, int to)
    {
        return IntStream.range(from, to).mapToObj(Stage::name).toList();
    }

    private static List<String> sorted(List<String> layers)
    {
        return layers.stream().sorted().toList();
    }

    @Test
    void differentStageBoundariesExchangeOnlyTheLayersBothStagesHold()
    {
        List<CacheGeometry> producers = engine(List.of(15, 15), 1, 0x1_0000_0000L);
        List<CacheGeometry> decoders = engine(List.of(10, 20), 1, 0x8_0000_0000L);
        StageExchange push = StageExchange.route(LAYERS, producers, decoders, TransferMode.PUSH);

        assertTrue(push.exchanges(0, 0) && push.exchanges(0, 1) && push.exchanges(1, 1));
        assertFalse(push.exchanges(1, 0), "producer stage 1 owns layers 15..29, none of which decoder stage 0 holds");
        assertEquals(sorted(names(0, 10)), sorted(push.layers(0, 0)));
        assertEquals(sorted(names(10, 15)), sorted(push.layers(0, 1)));
        assertEquals(sorted(names(15, 30)), sorted(push.layers(1, 1)));
        assertEquals(List.of(), push.layers(1, 0));
        assertEquals(List.of(0), push.producersOf(0));
        assertEquals(List.of(0, 1), push.producersOf(1));
        assertEquals(List.of(0, 1), push.decodersOf(0));
        assertEquals(1, push.expectedWriteNotifications(0));
        assertEquals(2, push.expectedWriteNotifications(1));

        for (TransferEntry entry : push.plan(0, 1).entries()) {
            assertTrue(producers.get(0).regions().get(entry.localRegion()).members().contains(entry.layer()), "a push plan's local side is the producer stage");
            assertEquals(decoders.get(1).regions().get(entry.remoteRegion()).base(), entry.remote().base(), "entries carry the decoder stage's own geometry");
        }
        assertCode(ErrorCode.INVALID_ARGUMENT, () -> push.plan(1, 0), "producer stage 1 and decoder stage 0 share no layer", "(0, 0), (0, 1), (1, 1)");
        assertCode(ErrorCode.INVALID_ARGUMENT, () -> push.expectedReadNotifications(0), "routed for PUSH");

        StageExchange pull = StageExchange.route(LAYERS, producers, decoders, TransferMode.PULL);
        assertEquals(2, pull.expectedReadNotifications(0));
        assertEquals(1, pull.expectedReadNotifications(1));
        assertEquals(sorted(names(10, 15)), sorted(pull.layers(0, 1)));
        for (TransferEntry entry : pull.plan(0, 1).entries()) {
            assertTrue(decoders.get(1).regions().get(entry.localRegion()).members().contains(entry.layer()), "a pull plan's local side is the decoder stage");
            assertEquals(producers.get(0).regions().get(entry.remoteRegion()).base(), entry.remote().base());
        }
        assertCode(ErrorCode.INVALID_ARGUMENT, () -> pull.expectedWriteNotifications(0), "routed for PULL");
    }

    @Test
    void threeProducerStagesIntoTwoDecoderStages()
    {
        StageExchange exchange = StageExchange.route(LAYERS, engine(List.of(10, 10, 10), 1, 0x1_0000_0000L), engine(List.of(15, 15), 1, 0x8_0000_0000L),
                TransferMode.PUSH);
        assertEquals(List.of(0, 1), exchange.producersOf(0));
        assertEquals(List.of(1, 2), exchange.producersOf(1));
        assertEquals(sorted(names(10, 15)), sorted(exchange.layers(1, 0)));
        assertEquals(sorted(names(15, 20)), sorted(exchange.layers(1, 1)));
        assertEquals(2, exchange.expectedWriteNotifications(0));
        assertEquals(2, exchange.expectedWriteNotifications(1));
    }

    @Test
    void replicatedBlocksArePushedByOneProducerRankPerDecoderRank()
    {
        List<LayerSpec> latent = layers(2, i -> 0);
        BiFunction<Rank, Long, CacheGeometry> mla = (rank, base) -> Stage.rank(rank, 2).groups(GroupKind.MLA)
                .region(base, 576, 576, 4, 0, SplitClass.REPLICATE, Stage.name(rank.ppRank())).build();
        List<CacheGeometry> producers = List.of(mla.apply(new Rank(0, 2, 0, 1), 0x1000L), mla.apply(new Rank(1, 2, 0, 1), 0x2000L));
        CacheGeometry wideDecoder = Stage.rank(new Rank(0, 1, 3, 4), 2).groups(GroupKind.MLA)
                .region(0x9000, 576, 576, 4, 0, SplitClass.REPLICATE, Stage.name(0)).region(0xA000, 576, 576, 4, 0, SplitClass.REPLICATE, Stage.name(1)).build();
        StageExchange intoWider = StageExchange.route(latent, producers, List.of(wideDecoder), TransferMode.PUSH);
        assertEquals(List.of(0, 1, 2, 3), intoWider.plan(0, 0).tpPlan().writeTargets(), "the one producer rank writes every decoder rank's copy");
        assertEquals(2, intoWider.expectedWriteNotifications(0), "one write per producer stage");

        List<CacheGeometry> wideProducers = List.of(mla.apply(new Rank(0, 2, 0, 4), 0x1000L), mla.apply(new Rank(1, 2, 0, 4), 0x2000L));
        CacheGeometry narrowDecoder = Stage.rank(new Rank(0, 1, 0, 1), 2).groups(GroupKind.MLA)
                .region(0x9000, 576, 576, 4, 0, SplitClass.REPLICATE, Stage.name(0)).region(0xA000, 576, 576, 4, 0, SplitClass.REPLICATE, Stage.name(1)).build();
        StageExchange intoNarrower = StageExchange.route(latent, wideProducers, List.of(narrowDecoder), TransferMode.PUSH);
        assertEquals(2, intoNarrower.expectedWriteNotifications(0), "one replica per producer stage is written, not one per producer rank");
    }

    @Test
    void notificationsFollowTheTensorParallelPlansOfThePairs()
    {
        // every producer stage has two ranks, each writing its half of the heads into the one decoder rank
        StageExchange push = StageExchange.route(LAYERS, engine(List.of(15, 15), 2, 0x1_0000_0000L), engine(List.of(10, 20), 1, 0x8_0000_0000L),
                TransferMode.PUSH);
        assertEquals(2, push.expectedWriteNotifications(0));
        assertEquals(4, push.expectedWriteNotifications(1));
        // two decoder ranks read their halves from the one producer rank of each stage
        StageExchange pull = StageExchange.route(LAYERS, engine(List.of(15, 15), 1, 0x1_0000_0000L), engine(List.of(10, 20), 2, 0x8_0000_0000L),
                TransferMode.PULL);
        assertEquals(4, pull.expectedReadNotifications(0));
        assertEquals(2, pull.expectedReadNotifications(1));
    }

    @Test
    void aDecoderWithoutPipelineParallelismWaitsForEveryProducerStage()
    {
        List<CacheGeometry> producers = engine(List.of(15, 15), 1, 0x1_0000_0000L);
        CacheGeometry decoder = engine(List.of(30), 1, 0x8_0000_0000L).getFirst();
        StageExchange exchange = StageExchange.route(LAYERS, producers, List.of(decoder), TransferMode.PUSH);
        assertEquals(2, exchange.expectedWriteNotifications(0));
        for (int p = 0; p < 2; p++) {
            assertEquals(Routing.plan(LAYERS, producers.get(p), decoder, TransferMode.PUSH).entries(), exchange.plan(p, 0).entries(),
                    "a whole decoder is routed exactly as the pairwise routing routes it");
        }
    }

    @Test
    void stagesMustOwnDisjointLayersThatTheOtherEngineHolds()
    {
        List<CacheGeometry> producers = engine(List.of(15, 15), 1, 0x1_0000_0000L);
        ModelCacheSpec spec = hybridSpec(LAYERS, List.of(15, 15));
        // decoder stage 1 claims layer 14 too
        CacheGeometry overlapping = Stage.rank(new Rank(1, 2, 0, 1), 30).groups(spec.groups().get(0).kind(), spec.groups().get(1).kind())
                .hybridPools(LAYERS.subList(14, 30), 0x9_0000_0000L, 0x10_0000L, 4096, 64).build();
        List<CacheGeometry> decoders = List.of(engine(List.of(15, 15), 1, 0x8_0000_0000L).getFirst(), overlapping);
        assertCode(ErrorCode.ROUTING_FAILED, () -> StageExchange.route(LAYERS, producers, decoders, TransferMode.PUSH),
                "layer " + name(14) + " is in decoder stage 0", "and in decoder stage 1", "must own disjoint layers");

        // producer stage 1 does not own layer 29, which the decoder holds
        CacheGeometry short1 = Stage.rank(new Rank(1, 2, 0, 1), 30).groups(spec.groups().get(0).kind(), spec.groups().get(1).kind())
                .hybridPools(LAYERS.subList(15, 29), 0x2_0000_0000L, 0x10_0000L, 4096, 64).build();
        List<CacheGeometry> shortProducers = List.of(producers.getFirst(), short1);
        assertCode(ErrorCode.ROUTING_FAILED, () -> StageExchange.route(LAYERS, shortProducers, engine(List.of(30), 1, 0x8_0000_0000L), TransferMode.PUSH),
                "decoder stage 0", "holds layer " + name(29), "no producer stage holds it", "left stale");

        assertCode(ErrorCode.ROUTING_FAILED, () -> StageExchange.route(LAYERS, producers.reversed(), engine(List.of(30), 1, 0x8_0000_0000L), TransferMode.PUSH),
                "producer stage list is inconsistent", "entry 0 is rank pp1/2:tp0/1");
        assertCode(ErrorCode.ROUTING_FAILED, () -> StageExchange.route(LAYERS, List.of(), producers, TransferMode.PUSH), "no producer stages");
    }
}
