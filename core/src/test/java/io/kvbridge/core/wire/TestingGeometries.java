package io.kvbridge.core.wire;

import io.kvbridge.spi.geometry.BlockRun;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * Hand-built geometries of the shapes layouts produce, for wire tests. Addresses are plausible
 * numbers, not memory: nothing here is ever read or written.
 */
public final class TestingGeometries
{
    public static final long HOST_BASE = 0x7f00_0000_0000L;
    public static final long DEVICE_BASE = 0x7a00_0000_0000L;
    // the top bit set, as half of all drawn epochs have: it must survive the codec as a negative long
    public static final long EPOCH = 0x8badf00d_5eed_0001L;

    private TestingGeometries()
    {
    }

    public static ModelIdentity identity(int layers)
    {
        return new ModelIdentity("test-org/dense-" + layers, "bfloat16", "bfloat16", 8, 128, layers, false);
    }

    /** One region per layer, K and V of a block together, in one host allocation: the default layout's shape. */
    public static CacheGeometry perLayer(int layers, Rank rank)
    {
        int blockTokens = 16;
        long blockBytes = 2L * (8 / rank.tpSize()) * 128 * blockTokens * 2;
        int capacity = 1_000;
        long regionBytes = blockBytes * capacity;
        Allocation allocation = new Allocation(HOST_BASE, regionBytes * layers, MemoryKind.HOST, 0);
        List<Region> regions = new ArrayList<>();
        for (int i = 0; i < layers; i++) {
            String layer = "model.layers." + i + ".self_attn";
            regions.add(new Region(layer, HOST_BASE + i * regionBytes, blockBytes, blockBytes, capacity, 0, MemoryKind.HOST, 0, SplitClass.SPLIT,
                    List.of(layer), List.of()));
        }
        return new CacheGeometry("per-layer", rank, identity(layers), blockTokens, 1,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128)), List.of(allocation), regions);
    }

    /**
     * Attention HMA: a full-attention group and a sliding-window group whose layers share pooled
     * regions (group id -1, several members each), plus one region of the full group alone.
     */
    public static CacheGeometry pooledHma()
    {
        long blockBytes = 32_768;
        long stride = 65_536;
        int capacity = 512;
        Allocation allocation = new Allocation(HOST_BASE, 4 * stride * capacity, MemoryKind.HOST, 0);
        List<Region> regions = List.of(
                new Region("pool.0", HOST_BASE, blockBytes, stride, capacity, -1, MemoryKind.HOST, 0, SplitClass.SPLIT,
                        List.of("model.layers.0.self_attn", "model.layers.1.self_attn", "model.layers.2.self_attn"), List.of()),
                new Region("pool.1", HOST_BASE + blockBytes, blockBytes, stride, capacity, -1, MemoryKind.HOST, 0, SplitClass.SPLIT,
                        List.of("model.layers.3.self_attn", "model.layers.4.self_attn", "model.layers.5.self_attn"), List.of()),
                new Region("model.layers.6.self_attn", HOST_BASE + 2 * stride * capacity, blockBytes, blockBytes, capacity, 0, MemoryKind.HOST, 0,
                        SplitClass.SPLIT, List.of("model.layers.6.self_attn"), List.of()));
        ModelIdentity identity = new ModelIdentity("test-org/hybrid-7", "bfloat16", "fp8_e4m3", 8, 128, 7, true);
        return new CacheGeometry("hma", new Rank(0, 1, 1, 2), identity, 16, 2,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128), new CacheGroup(1, GroupKind.SLIDING_WINDOW, 4_096, 8, 128)),
                List.of(allocation), regions);
    }

    /** Packed MLA: the latent of three layers side by side in one replicated block, with member offsets. */
    public static CacheGeometry packedMla()
    {
        long pageBytes = 576L * 64 * 2;
        long blockBytes = 3 * pageBytes + 512;
        int capacity = 256;
        List<String> layers = List.of("model.layers.0.self_attn.mla", "model.layers.1.self_attn.mla", "model.layers.2.self_attn.mla");
        List<PackedMember> packed = List.of(new PackedMember(layers.get(0), 0, pageBytes), new PackedMember(layers.get(1), pageBytes, pageBytes),
                new PackedMember(layers.get(2), 2 * pageBytes + 512, pageBytes));
        Allocation allocation = new Allocation(DEVICE_BASE, blockBytes * capacity, MemoryKind.DEVICE, 0);
        Region region = new Region("packed.0", DEVICE_BASE, blockBytes, blockBytes, capacity, 0, MemoryKind.DEVICE, 0, SplitClass.REPLICATE, layers,
                packed);
        ModelIdentity identity = new ModelIdentity("test-org/mla-3", "bfloat16", "bfloat16", 1, 576, 3, false);
        return new CacheGeometry("mla-packed", new Rank(1, 2, 0, 1), identity, 64, 1, List.of(new CacheGroup(0, GroupKind.MLA, 0, 1, 576)),
                List.of(allocation), regions(region));
    }

    /** Regions in device memory on device 3 next to one region staged in host memory. */
    public static CacheGeometry deviceRegions()
    {
        long blockBytes = 16_384;
        int capacity = 2_048;
        Allocation device = new Allocation(DEVICE_BASE, 2 * blockBytes * capacity, MemoryKind.DEVICE, 3);
        Allocation host = new Allocation(HOST_BASE, blockBytes * capacity, MemoryKind.HOST, 0);
        List<Region> regions = List.of(
                new Region("model.layers.0.attn", DEVICE_BASE, blockBytes, blockBytes, capacity, 0, MemoryKind.DEVICE, 3, SplitClass.SPLIT,
                        List.of("model.layers.0.attn"), List.of()),
                new Region("model.layers.1.attn", DEVICE_BASE + blockBytes * capacity, blockBytes, blockBytes, capacity, 0, MemoryKind.DEVICE, 3,
                        SplitClass.INTERLEAVED, List.of("model.layers.1.attn"), List.of()),
                new Region("model.layers.2.attn", HOST_BASE, blockBytes, blockBytes, capacity, 0, MemoryKind.HOST, 0, SplitClass.SPLIT,
                        List.of("model.layers.2.attn"), List.of()));
        ModelIdentity identity = new ModelIdentity("test-org/dense-3", "float16", "float16", 4, 64, 3, false);
        return new CacheGeometry("per-layer", new Rank(0, 1, 3, 4), identity, 32, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 4, 64)),
                List.of(device, host), regions);
    }

    /** An attention layer and a Mamba-2 layer (bf16 convolution state, fp32 SSM state) on rank 1 of TP 2. */
    public static CacheGeometry hybridState()
    {
        ModelIdentity identity = new ModelIdentity("test/hybrid-ssm", "bfloat16", "bfloat16", 8, 128, 2, true);
        CacheGroup mamba = new CacheGroup(1, GroupKind.MAMBA, 0, 64, 64, io.kvbridge.spi.geometry.StateComponent.mamba2(64, 64, 128, 8, 3, "bfloat16", "float32"));
        long page = 4L * 16 * 2 * 128 * 2;
        long state = mamba.stateBytes(2);
        Allocation allocation = new Allocation(HOST_BASE, 64 * page + 4 * state, MemoryKind.HOST, 0);
        List<Region> regions = List.of(
                new Region("model.layers.0.self_attn", HOST_BASE, page, page, 64, 0, MemoryKind.HOST, 0, SplitClass.SPLIT, List.of("model.layers.0.self_attn"),
                        List.of()),
                new Region("model.layers.1.mixer", HOST_BASE + 64 * page, state, state, 4, 1, MemoryKind.HOST, 0, SplitClass.SPLIT,
                        List.of("model.layers.1.mixer"), List.of()));
        return new CacheGeometry("hma", new Rank(0, 1, 1, 2), identity, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128), mamba),
                List.of(allocation), regions);
    }

    public static List<CacheGeometry> all()
    {
        return List.of(perLayer(4, Rank.single()), perLayer(93, new Rank(0, 1, 1, 2)), pooledHma(), packedMla(), deviceRegions(), pagedPlanes(),
                hybridState());
    }

    /**
     * Two layers kept as key and value planes in three separately allocated pages, as an engine
     * with per-session pages keeps them: each plane is a region of three runs, one per page, the
     * pages out of address order.
     */
    public static CacheGeometry pagedPlanes()
    {
        long rowBytes = 256;
        int blockTokens = 16;
        long blockBytes = rowBytes * blockTokens;
        int blocksPerPage = 8;
        long planeBytes = blockBytes * blocksPerPage;
        long pageBytes = 4 * planeBytes;
        long[] pages = {HOST_BASE + 2 * pageBytes, HOST_BASE, HOST_BASE + 5 * pageBytes};
        List<Allocation> allocations = new ArrayList<>();
        for (long page : pages) {
            allocations.add(new Allocation(page, pageBytes, MemoryKind.HOST, 0));
        }
        List<Region> regions = new ArrayList<>();
        for (int layer = 0; layer < 2; layer++) {
            for (KvPart part : List.of(KvPart.KEY, KvPart.VALUE)) {
                long offset = (layer * 2L + (part == KvPart.VALUE ? 1 : 0)) * planeBytes;
                List<BlockRun> runs = new ArrayList<>();
                for (long page : pages) {
                    runs.add(new BlockRun(page + offset, blocksPerPage));
                }
                String name = "model.layers." + layer + "." + part.name().toLowerCase(java.util.Locale.ROOT);
                regions.add(new Region(name, runs.getFirst().base(), blockBytes, blockBytes, pages.length * blocksPerPage, 0, MemoryKind.HOST, 0,
                        SplitClass.INTERLEAVED, List.of("model.layers." + layer), List.of(), part, runs));
            }
        }
        ModelIdentity identity = new ModelIdentity("test-org/paged-2", "float32", "float32", 2, 32, 2, false);
        return new CacheGeometry("paged", Rank.single(), identity, blockTokens, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 32)),
                allocations, regions);
    }

    public static RankMetadata metadata(String engineId, CacheGeometry geometry)
    {
        return new RankMetadata(engineId, EPOCH, "ucx", new byte[] {1, 2, 3, 4, 5, 6, 7, 8, -1, 0}, EnumSet.of(PeerCapability.PUSH, PeerCapability.PULL),
                geometry);
    }

    private static List<Region> regions(Region... regions)
    {
        return List.of(regions);
    }
}
