package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.routing.HybridStateEngines;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A hybrid model's attention blocks and Mamba states moved between engines of other tensor-parallel
 * sizes over the real {@code local} transport, in both modes: every byte of every decoder rank
 * must be what it means (layer, request position, head or component and unit), and every other
 * byte zero.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class HybridStateTransferTest
{
    private static final int[][] PRODUCER_IDS = {{5, 1, 3}, {2}};
    private static final int[][] DECODER_IDS = {{0, 4, 2}, {1}};

    @ParameterizedTest(name = "{0}: producer tp{1} -> decoder tp{2}")
    @CsvSource({"PUSH, 1, 2", "PUSH, 2, 1", "PULL, 1, 2", "PULL, 2, 1", "PUSH, 2, 2", "PULL, 4, 2"})
    void everyDecoderRankHoldsItsSliceOfEveryStateComponent(TransferMode mode, int producerTp, int decoderTp)
    {
        try (EngineHarness harness = new EngineHarness()) {
            ModelCacheSpec spec = HybridStateEngines.spec(1);
            List<ProducerRank> producers = new ArrayList<>();
            for (int p = 0; p < producerTp; p++) {
                CacheGeometry geometry = geometry(harness, new Rank(0, 1, p, producerTp));
                HybridStateEngines.forEachByte(geometry, PRODUCER_IDS, (address, value) -> segment(address).set(ValueLayout.JAVA_BYTE, 0, value));
                producers.add(new ProducerRank(harness.services, ConnectorSettings.builder("ssm-p", geometry).cacheSpec(spec).build(), true));
            }
            List<CacheGeometry> decoderGeometries = new ArrayList<>();
            List<ConsumerRank> consumers = new ArrayList<>();
            for (int d = 0; d < decoderTp; d++) {
                CacheGeometry geometry = geometry(harness, new Rank(0, 1, d, decoderTp));
                decoderGeometries.add(geometry);
                consumers.add(new ConsumerRank(harness.services, ConnectorSettings.builder("ssm-d", geometry).cacheSpec(spec).build(), true));
            }
            producers.forEach(harness::own);
            consumers.forEach(harness::own);
            TransferParams params = null;
            for (ProducerRank producer : producers) {
                params = producer.prefillFinished("prefill-1", BlockIds.of(PRODUCER_IDS));
            }
            for (ConsumerRank consumer : consumers) {
                consumer.blocksAllocated("decode-1", params, mode, BlockIds.of(DECODER_IDS));
            }
            for (int d = 0; d < decoderTp; d++) {
                ConsumerRank consumer = consumers.get(d);
                List<String> received = new ArrayList<>();
                List<ReceiveFailure> failed = new ArrayList<>();
                await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "decoder rank received");
                assertEquals(List.of(), failed, "decoder rank " + d);
                assertEquals(0, mismatches(decoderGeometries.get(d)), "bytes differing from the expected image on decoder rank " + d);
            }
            for (ProducerRank producer : producers) {
                List<FreedRequest> freed = new ArrayList<>();
                await(() -> EngineHarness.drain(producer, freed).size() == 1, "producer rank frees");
                assertEquals(List.of(new FreedRequest("prefill-1", FreeReason.COMPLETED)), freed);
            }
            assertEquals(0, harness.registry.get("kvbridge.transfer.failed").counter().count());
        }
    }

    /** One host allocation per layer, as {@link HybridStateEngines#geometry} lays them out, in the harness's arena. */
    private CacheGeometry geometry(EngineHarness harness, Rank rank)
    {
        List<Allocation> allocations = new ArrayList<>();
        List<Region> regions = new ArrayList<>();
        for (LayerSpec layer : HybridStateEngines.LAYERS) {
            CacheGroup group = HybridStateEngines.GROUPS.get(layer.groupId());
            long blockBytes = group.stateful() ? group.stateBytes(rank.tpSize()) : HybridStateEngines.headBytes() * HybridStateEngines.KV_HEADS / rank.tpSize();
            int capacity = group.stateful() ? HybridStateEngines.STATE_CAPACITY : HybridStateEngines.KV_CAPACITY;
            MemorySegment memory = harness.arena.allocate(blockBytes * capacity, 64);
            segments.add(memory);
            allocations.add(Allocation.host(memory));
            regions.add(new Region(layer.name(), memory.address(), blockBytes, blockBytes, capacity, layer.groupId(), MemoryKind.HOST, 0, SplitClass.SPLIT,
                    List.of(layer.name()), List.of()));
        }
        return new CacheGeometry("per-layer", rank, HybridStateEngines.MODEL, HybridStateEngines.BLOCK_TOKENS, 1, HybridStateEngines.GROUPS, allocations,
                regions);
    }

    private final List<MemorySegment> segments = new ArrayList<>();

    private MemorySegment segment(long address)
    {
        for (MemorySegment memory : segments) {
            if (address >= memory.address() && address < memory.address() + memory.byteSize()) {
                return memory.asSlice(address - memory.address(), 1);
            }
        }
        throw new AssertionError("0x" + Long.toHexString(address) + " lies in no allocation");
    }

    private long mismatches(CacheGeometry decoder)
    {
        java.util.Map<Long, Byte> expected = new java.util.HashMap<>();
        HybridStateEngines.forEachByte(decoder, DECODER_IDS, expected::put);
        long wrong = 0;
        for (Allocation allocation : decoder.allocations()) {
            for (long a = allocation.address(); a < allocation.address() + allocation.bytes(); a++) {
                if (segment(a).get(ValueLayout.JAVA_BYTE, 0) != expected.getOrDefault(a, (byte) 0)) {
                    wrong++;
                }
            }
        }
        return wrong;
    }
}
