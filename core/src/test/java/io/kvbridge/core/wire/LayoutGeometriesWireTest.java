package io.kvbridge.core.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.tools.GeometryRoundTrip;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Every layout on the class path describes geometries that survive the wire unchanged. The inputs
 * follow each layout's documented placement; addresses are plausible numbers, never touched.
 */
final class LayoutGeometriesWireTest
{
    private static final long BASE = 0x7f00_0000_0000L;
    private static final int CAPACITY = 64;

    private record Input(String name, Map<String, String> config, ModelCacheSpec spec, CacheMemory memory, Rank rank)
    {
    }

    @Test
    void everyLayoutsGeometrySurvivesTheWire()
    {
        Map<String, CacheLayoutFactory> factories = new TreeMap<>();
        ServiceLoader.load(CacheLayoutFactory.class).forEach(factory -> factories.put(factory.name(), factory));
        assertEquals(List.of("hma", "mla", "per-layer"), List.copyOf(factories.keySet()), "a layout without wire round-trip inputs here");
        Map<String, List<Input>> inputs = Map.of("per-layer", perLayerInputs(), "hma", hmaInputs(), "mla", mlaInputs());
        int checked = 0;
        for (Map.Entry<String, CacheLayoutFactory> entry : factories.entrySet()) {
            for (Input input : inputs.get(entry.getKey())) {
                CacheGeometry geometry = entry.getValue().create(input.config()).describe(input.spec(), input.memory(), input.rank());
                assertEquals(geometry, GeometryRoundTrip.roundTrip(geometry), entry.getKey() + ": " + input.name());
                checked++;
            }
        }
        assertEquals(7, checked);
    }

    @Test
    void packedMlaGeometryCarriesItsMemberOffsets()
    {
        Input packed = mlaInputs().get(1);
        CacheGeometry geometry = new io.kvbridge.layout.mla.MlaCacheLayoutFactory().create(packed.config())
                .describe(packed.spec(), packed.memory(), packed.rank());
        assertEquals(1, geometry.regions().size());
        assertTrue(geometry.regions().getFirst().packed());
        assertEquals(geometry.regions().getFirst().packedMembers(), GeometryRoundTrip.roundTrip(geometry).regions().getFirst().packedMembers());
        CacheGeometry pooled = new io.kvbridge.layout.hma.HmaCacheLayoutFactory().create(Map.of())
                .describe(hmaInputs().getFirst().spec(), hmaInputs().getFirst().memory(), Rank.single());
        assertFalse(pooled.regions().stream().noneMatch(region -> region.groupId() == -1 && region.members().size() > 1),
                "the hma geometry has no pooled region shared by several groups");
    }

    private static List<Input> perLayerInputs()
    {
        ModelIdentity identity = new ModelIdentity("plain-model", "bfloat16", "bfloat16", 4, 16, 4, false);
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            layers.add(new LayerSpec("model.layers." + i + ".self_attn", 0));
        }
        ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 4, 16)), layers, List.of(4));
        // 4 KV heads over TP2: 2 heads x 16 tokens x 2 (K, V) x 16 elements x 2 bytes
        long page = 2 * 16 * 2 * 16 * 2;
        List<Allocation> allocations = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            allocations.add(new Allocation(BASE + i * (1L << 24), CAPACITY * page, MemoryKind.HOST, 0));
        }
        return List.of(new Input("tp2 rank 1, one allocation per layer", Map.of(), spec, CacheMemory.of(allocations), new Rank(0, 1, 1, 2)));
    }

    /** 10 layers, every fifth full attention, the rest a sliding window; the i-th layer of each group in pool i. */
    private static List<Input> hmaInputs()
    {
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            layers.add(new LayerSpec("model.layers." + i + ".self_attn", i % 5 == 4 ? 0 : 1));
        }
        ModelIdentity identity = new ModelIdentity("hybrid-model", "bfloat16", "bfloat16", 2, 8, 10, true);
        List<CacheGroup> groups = List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 8), new CacheGroup(1, GroupKind.SLIDING_WINDOW, 2048, 2, 8));
        List<Input> inputs = new ArrayList<>();
        for (Rank rank : List.of(Rank.single(), new Rank(1, 2, 0, 1))) {
            List<Integer> stages = rank.ppSize() == 1 ? List.of(10) : List.of(5, 5);
            ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1, groups, layers, stages);
            // 2 heads x 16 tokens x 2 (K, V) x 8 elements x 2 bytes
            long page = 1024;
            List<Allocation> pools = new ArrayList<>();
            List<LayerView> placement = new ArrayList<>();
            int[] seen = new int[groups.size()];
            for (LayerSpec layer : spec.layersOfStage(rank.ppRank())) {
                int pool = seen[layer.groupId()]++;
                while (pools.size() <= pool) {
                    pools.add(new Allocation(BASE + pools.size() * (1L << 24), CAPACITY * page, MemoryKind.HOST, 0));
                }
                placement.add(new LayerView(layer.name(), pools.get(pool).address(), page, page, CAPACITY));
            }
            inputs.add(new Input("pooled by the allocator's rule, " + rank, Map.of(), spec, new CacheMemory(pools, placement), rank));
        }
        return inputs;
    }

    /** Latent width 32 in bfloat16 with 16-token blocks: 1024-byte pages, per layer and packed into rows. */
    private static List<Input> mlaInputs()
    {
        long page = 16 * 32 * 2;
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            layers.add(new LayerSpec("model.layers." + i + ".self_attn.attn", 0));
        }
        ModelIdentity identity = new ModelIdentity("latent-model", "bfloat16", "bfloat16", 1, 32, 4, false);
        ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1, List.of(new CacheGroup(0, GroupKind.MLA, 0, 1, 32)), layers, List.of(4));
        List<Allocation> perLayer = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            perLayer.add(new Allocation(BASE + i * (1L << 24), CAPACITY * page, MemoryKind.HOST, 0));
        }
        Allocation rows = new Allocation(BASE, CAPACITY * 4 * page, MemoryKind.HOST, 0);
        List<LayerView> packed = new ArrayList<>();
        for (int k = 0; k < 4; k++) {
            packed.add(new LayerView(layers.get(k).name(), BASE + k * page, page, 4 * page, CAPACITY));
        }
        ModelCacheSpec staged = new ModelCacheSpec(identity, 16, 1, spec.groups(), layers, List.of(2, 2));
        Allocation stageRows = new Allocation(BASE, CAPACITY * 2 * page, MemoryKind.HOST, 0);
        List<LayerView> stagePacked = List.of(
                new LayerView(layers.get(2).name(), BASE, page, 2 * page, CAPACITY),
                new LayerView(layers.get(3).name(), BASE + page, page, 2 * page, CAPACITY));
        return List.of(
                new Input("one allocation per layer", Map.of("packing", "per-layer"), spec, CacheMemory.of(perLayer), new Rank(0, 1, 1, 4)),
                new Input("four layers packed into rows", Map.of("packing", "packed"), spec, new CacheMemory(List.of(rows), packed), Rank.single()),
                new Input("pp2 stage 1 packed", Map.of("packing", "packed"), staged, new CacheMemory(List.of(stageRows), stagePacked), new Rank(1, 2, 0, 1)),
                new Input("auto packing of views", Map.of(), spec, new CacheMemory(List.of(rows), packed), Rank.single()));
    }
}
