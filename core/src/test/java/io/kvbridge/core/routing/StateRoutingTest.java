package io.kvbridge.core.routing;

import static io.kvbridge.core.routing.HybridStateEngines.GROUPS;
import static io.kvbridge.core.routing.HybridStateEngines.LAYERS;
import static io.kvbridge.core.routing.HybridStateEngines.MODEL;
import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.geometry.StateComponent;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Mamba state regions routed and planned between engines of other tensor-parallel and pipeline
 * sizes: every byte of every decoder rank is checked against what it means.
 */
final class StateRoutingTest
{
    private static final int[][] PRODUCER_IDS = {{5, 1, 3}, {2, 0}};
    private static final int[][] DECODER_IDS = {{0, 4, 2}, {1, 2}};

    @ParameterizedTest(name = "producer TP {0} -> decoder TP {1}")
    @CsvSource({"1, 1", "1, 2", "2, 1", "1, 4", "4, 1", "2, 4", "4, 2"})
    void everyDecoderRankReceivesExactlyItsSliceOfEveryComponent(int producerTp, int decoderTp)
    {
        HybridStateEngines.Memory memory = new HybridStateEngines.Memory();
        List<CacheGeometry> producers = ranks(0, 1, producerTp).getFirst();
        List<CacheGeometry> decoders = ranks(1, 1, decoderTp).getFirst();
        fill(memory, producers, decoders);
        for (CacheGeometry decoder : decoders) {
            Route route = Routing.route(LAYERS, decoder, producers.getFirst());
            assertEquals(RoutingMode.BY_INDEX, route.mode(), "same pooling on both sides pairs by position");
            long components = route.entries().stream().filter(TransferEntry::stateComponent).count();
            assertEquals(2 * 4, components, "two state layers of four components each");
            TransferPlan plan = TransferPlan.pair(decoder, producers.getFirst(), route.entries());
            HybridStateEngines.pull(plan, decoder, producers, DECODER_IDS, PRODUCER_IDS, memory);
        }
        for (CacheGeometry decoder : decoders) {
            assertEquals(0, memory.mismatches(decoder, DECODER_IDS), "bytes differing from the expected image on decoder rank " + decoder.rank());
        }
    }

    @ParameterizedTest(name = "PP2 x TP {0} -> PP1 x TP {1}")
    @CsvSource({"1, 1", "2, 1", "1, 2"})
    void pipelineStagesMoveTheirStateLayersToAWholeDecoder(int producerTp, int decoderTp)
    {
        HybridStateEngines.Memory memory = new HybridStateEngines.Memory();
        List<List<CacheGeometry>> stages = ranks(0, 2, producerTp);
        List<CacheGeometry> decoders = ranks(1, 1, decoderTp).getFirst();
        for (List<CacheGeometry> stage : stages) {
            fill(memory, stage, List.of());
        }
        decoders.forEach(memory::add);
        for (CacheGeometry decoder : decoders) {
            for (List<CacheGeometry> stage : stages) {
                TransferPlan plan = HybridStateEngines.plan(decoder, stage.getFirst(), true);
                HybridStateEngines.pull(plan, decoder, stage, DECODER_IDS, PRODUCER_IDS, memory);
            }
        }
        for (CacheGeometry decoder : decoders) {
            assertEquals(0, memory.mismatches(decoder, DECODER_IDS), "bytes differing from the expected image on decoder rank " + decoder.rank());
        }
    }

    @Test
    void stateMovesAsOneDescriptorPerComponentAndSourceWithoutSplittingForBlockSizes()
    {
        List<CacheGeometry> producers = ranks(0, 1, 2).getFirst();
        CacheGeometry decoder = ranks(1, 1, 1).getFirst().getFirst();
        TransferPlan plan = HybridStateEngines.plan(decoder, producers.getFirst(), false);
        assertEquals(List.of(0, 1), plan.tpPlan().sources());
        TransferEntry ssm = plan.entries().stream().filter(entry -> entry.stateComponent() && entry.local().name().equals("layers.1/ssm")).findFirst()
                .orElseThrow();
        CacheGroup group = GROUPS.get(1);
        assertEquals(decoder.regions().get(1).base() + group.componentOffset(3, 1), ssm.local().base(), "the decoder's ssm starts after its conv state");
        assertEquals(producers.getFirst().regions().get(1).base() + group.componentOffset(3, 2), ssm.remote().base());
        assertEquals(group.state().get(3).bytesPerRank(1), ssm.local().blockBytes());
        assertEquals(group.state().get(3).bytesPerRank(2), ssm.remote().blockBytes());
    }

    @Test
    void stateRegionWhoseBytesDifferFromItsComponentsIsRefused()
    {
        CacheGeometry valid = ranks(0, 1, 1).getFirst().getFirst();
        Region state = valid.regions().get(1);
        Region wrong = new Region(state.name(), state.base(), state.blockBytes() - 8, state.stride(), state.capacity(), state.groupId(), MemoryKind.HOST, 0,
                SplitClass.SPLIT, state.members(), List.of());
        List<Region> regions = new ArrayList<>(valid.regions());
        regions.set(1, wrong);
        assertCode(ErrorCode.GEOMETRY_INVALID, () -> new CacheGeometry("per-layer", valid.rank(), MODEL, 2, 1, GROUPS, valid.allocations(), regions),
                "layers.1", "blockBytes=" + (state.blockBytes() - 8), "gives " + state.blockBytes(), "conv.x=48", "ssm=64");
    }

    @Test
    void peersDescribingAComponentDifferentlyAreRefusedNamingIt()
    {
        List<StateComponent> halfPrecision = StateComponent.mamba2(4, 2, 2, 2, 3, "bfloat16", "float16");
        List<CacheGroup> otherGroups = List.of(GROUPS.get(0), new CacheGroup(1, GroupKind.MAMBA, 0, 4, 2, halfPrecision));
        CacheGeometry decoder = ranks(1, 1, 1).getFirst().getFirst();
        CacheGeometry producer = ranks(0, 1, 1).getFirst().getFirst();
        List<Region> regions = new ArrayList<>(producer.regions());
        for (int r = 0; r < regions.size(); r++) {
            Region region = regions.get(r);
            if (region.groupId() == 1) {
                long bytes = otherGroups.get(1).stateBytes(1);
                regions.set(r, new Region(region.name(), region.base(), bytes, bytes, region.capacity(), 1, MemoryKind.HOST, 0, SplitClass.SPLIT,
                        region.members(), List.of()));
            }
        }
        CacheGeometry halfProducer = new CacheGeometry("per-layer", producer.rank(), MODEL, 2, 1, otherGroups, producer.allocations(), regions);
        assertCode(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> HybridStateEngines.plan(decoder, halfProducer, false),
                "layers.1", "component 3", "ssm (dtype=float32", "ssm (dtype=float16");
    }

    @Test
    void tensorParallelSizeNotDividingAComponentIsRefusedNamingLayerComponentAndBothValues()
    {
        // conv.B and conv.C have one group of state size 2: 2 channels cannot be split over 4 ranks
        List<StateComponent> narrow = StateComponent.mamba2(4, 2, 2, 1, 3, "bfloat16", "float32");
        List<CacheGroup> groups = List.of(GROUPS.get(0), new CacheGroup(1, GroupKind.MAMBA, 0, 4, 2, narrow));
        Region state = new Region("layers.1", 0x10000, 64, 64, 2, 1, MemoryKind.HOST, 0, SplitClass.SPLIT, List.of("layers.1"), List.of());
        assertCode(ErrorCode.GEOMETRY_INVALID, () -> new CacheGeometry("per-layer", new Rank(0, 1, 0, 4), MODEL, 2, 1, groups,
                List.of(new io.kvbridge.spi.memory.Allocation(0x10000, 128, MemoryKind.HOST, 0)), List.of(state)),
                "layers.1", "conv.B", "splitDim=2", "tpSize=4");
    }

    @Test
    void producerWithStateLayersTheDecoderLacksIsRefusedBeforeAnythingMoves()
    {
        CacheGeometry producer = ranks(0, 1, 1).getFirst().getFirst();
        List<LayerSpec> attentionOnly = LAYERS.stream().filter(layer -> !GROUPS.get(layer.groupId()).stateful()).toList();
        CacheGeometry decoder = HybridStateEngines.geometry(1, Rank.single(), attentionOnly);
        // push plans with the producer as the local side: its state layer has nowhere to go
        assertCode(ErrorCode.ROUTING_FAILED, () -> HybridStateEngines.plan(producer, decoder, false), "missing locally owned layer layers.1",
                "would leave it stale");
    }

    @Test
    void stateRegionMovedAsOneWholeBlockIsRefused()
    {
        CacheGeometry producer = ranks(0, 1, 2).getFirst().getFirst();
        CacheGeometry decoder = ranks(1, 1, 1).getFirst().getFirst();
        List<TransferEntry> wholeState = List.of(TransferEntry.whole(decoder, 1, producer, 1));
        assertCode(ErrorCode.ROUTING_FAILED, () -> TransferPlan.pair(decoder, producer, wholeState), "state group 1", "component by component");
    }

    @Test
    void specDescribesTheStateBytesPerRank()
    {
        ModelCacheSpec spec = HybridStateEngines.spec(1);
        CacheGroup mamba = spec.groups().get(1);
        // conv.x 8 channels x 3 x 2 B, conv.B and conv.C 4 x 3 x 2 B, ssm 4 heads x 2 x 2 x 4 B
        assertEquals(48 + 24 + 24 + 64, mamba.stateBytes(1));
        assertEquals((48 + 24 + 24 + 64) / 2, mamba.stateBytes(2));
        assertEquals(48 + 24 + 24, mamba.componentOffset(3, 1));
        assertTrue(mamba.stateful());
    }

    /** Every rank of an engine, per stage: {@code [stage][tpRank]}. */
    private static List<List<CacheGeometry>> ranks(int engine, int ppSize, int tpSize)
    {
        ModelCacheSpec spec = HybridStateEngines.spec(ppSize);
        List<List<CacheGeometry>> stages = new ArrayList<>();
        for (int pp = 0; pp < ppSize; pp++) {
            List<CacheGeometry> stage = new ArrayList<>();
            for (int tp = 0; tp < tpSize; tp++) {
                stage.add(HybridStateEngines.geometry(engine, new Rank(pp, ppSize, tp, tpSize), spec.layersOfStage(pp)));
            }
            stages.add(stage);
        }
        return stages;
    }

    private static void fill(HybridStateEngines.Memory memory, List<CacheGeometry> producers, List<CacheGeometry> decoders)
    {
        for (CacheGeometry producer : producers) {
            memory.add(producer);
            HybridStateEngines.forEachByte(producer, PRODUCER_IDS, memory::put);
        }
        decoders.forEach(memory::add);
    }
}
