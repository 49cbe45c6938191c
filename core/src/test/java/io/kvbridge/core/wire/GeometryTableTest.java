package io.kvbridge.core.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class GeometryTableTest
{
    @Test
    void rendersHeaderGroupsAllocationsAndRegions()
    {
        RankMetadata metadata = TestingGeometries.metadata("prefill-0", TestingGeometries.pooledHma());
        String text = GeometryTable.render(metadata);
        List<String> lines = text.lines().toList();
        assertEquals("engine              prefill-0", lines.get(0));
        assertEquals("epoch               8badf00d5eed0001", lines.get(1));
        assertEquals("rank                pp0/1:tp1/2", lines.get(2));
        assertEquals("transport           ucx (10 bytes of metadata)", lines.get(3));
        assertEquals("capabilities        push, pull", lines.get(4));
        assertEquals("compatibility hash  " + CompatibilityHash.of(metadata.geometry().model()), lines.get(7));
        assertEquals("layout              hma block_tokens=16 kernel_blocks_per_logical=2", lines.get(8));
        assertTrue(text.contains("\ngroups\nid  kind            window  kv_heads  head_size\n0   full_attention  0       8         128\n"
                + "1   sliding_window  4096    8         128\n"), text);
        assertTrue(text.contains("regions (3, 1536 blocks)\n"), text);
        String pool = lines.stream().filter(line -> line.startsWith("0  pool.0")).findFirst().orElseThrow();
        assertEquals(List.of("0", "pool.0", "host", "0", "-1", "split", "0x7f0000000000", "32768", "65536", "512",
                "model.layers.0.self_attn,model.layers.1.self_attn,model.layers.2.self_attn", "-"), List.of(pool.split(" +")));
    }

    @Test
    void rendersStateComponentsWithTheirOffsetsOnThisRank()
    {
        String text = GeometryTable.render(TestingGeometries.metadata("prefill-0", TestingGeometries.hybridState()));
        assertTrue(text.contains("1   mamba           0       64        64\n"), text);
        // TP 2: conv.x 2048 channels x 3 x 2 B, conv.B and conv.C 512 x 3 x 2 B, ssm 32 heads x 64 x 128 x 4 B
        String ssm = text.lines().filter(line -> line.startsWith("1      ssm")).findFirst().orElseThrow();
        assertEquals(List.of("1", "ssm", "float32", "64", "8192", Long.toString(3 * 2048 * 2 + 2 * 3 * 512 * 2), Long.toString(32L * 8192 * 4)),
                List.of(ssm.split(" +")));
        assertTrue(text.contains("state components (offset and bytes on this rank)"), text);
    }

    @Test
    void abbreviatesLongMemberListsAndShowsPackedPages()
    {
        CacheGeometry perLayer = TestingGeometries.perLayer(5, Rank.single());
        Region first = perLayer.regions().getFirst();
        List<String> layers = perLayer.regions().stream().map(Region::name).toList();
        Region pooled = new Region("pool", first.base(), first.blockBytes(), first.stride(), first.capacity(), 0, MemoryKind.HOST, 0, SplitClass.SPLIT,
                layers, List.of());
        CacheGeometry pooledGeometry = new CacheGeometry("hma", perLayer.rank(), perLayer.model(), 16, 1, perLayer.groups(), perLayer.allocations(),
                List.of(pooled));
        String text = GeometryTable.render(TestingGeometries.metadata("e", pooledGeometry));
        assertTrue(text.contains("model.layers.0.self_attn .. model.layers.4.self_attn (5)"), text);

        String packed = GeometryTable.render(TestingGeometries.metadata("e", TestingGeometries.packedMla()));
        assertTrue(packed.contains("0  packed.0  device  0       0      replicate  0x7a0000000000  221696       221696  256       "
                + "model.layers.0.self_attn.mla,model.layers.1.self_attn.mla,model.layers.2.self_attn.mla  0+73728,73728+73728,147968+73728\n"), packed);
    }

    @Test
    void givesJsonFriendlyDataWithWireNames()
    {
        RankMetadata metadata = TestingGeometries.metadata("decode-1", TestingGeometries.deviceRegions());
        Map<String, Object> data = GeometryTable.toData(metadata);
        assertEquals("decode-1", data.get("engine_id"));
        assertEquals("8badf00d5eed0001", data.get("epoch"));
        assertEquals("AQIDBAUGBwj/AA==", data.get("transport_metadata"));
        assertEquals(10, data.get("transport_metadata_bytes"));
        assertEquals(CompatibilityHash.of(metadata.geometry().model()), data.get("compatibility_hash"));
        assertEquals(List.of("push", "pull"), data.get("capabilities"));
        Map<?, ?> region = (Map<?, ?>) ((List<?>) data.get("regions")).get(1);
        assertEquals("device", region.get("memory_kind"));
        assertEquals(3, region.get("device"));
        assertEquals("interleaved", region.get("split"));
        String json = GeometryTable.toJson(metadata);
        assertTrue(json.startsWith("{\n  \"engine_id\": \"decode-1\",\n  \"epoch\": \"8badf00d5eed0001\",\n  \"rank\": {\n    \"pp_rank\": 0,"), json);
        assertTrue(json.contains("\"members\": [\n        \"model.layers.1.attn\"\n      ],"), json);
    }
}
