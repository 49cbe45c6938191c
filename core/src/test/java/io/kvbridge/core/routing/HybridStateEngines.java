package io.kvbridge.core.routing;

import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.geometry.StateComponent;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.transport.DescriptorPairs;
import java.util.ArrayList;
import java.util.List;

/**
 * A small hybrid model (attention layers 0 and 3, Mamba-2 layers 1 and 2) on simulated host
 * memory, one allocation per layer and rank, with every byte derived from what it means: for KV
 * (layer, request position, global head, byte), for state (layer, request position, component,
 * global unit of the split dimension, byte). Producer ranks are filled, decoder ranks start zeroed,
 * and after a transfer every byte of every decoder rank is compared with the expected image.
 */
public final class HybridStateEngines
{
    public static final int KV_HEADS = 4;
    public static final int BLOCK_TOKENS = 2;
    public static final int HEAD_SIZE = 2;
    public static final int KV_CAPACITY = 6;
    public static final int STATE_CAPACITY = 3;
    public static final List<StateComponent> MAMBA2 = StateComponent.mamba2(4, 2, 2, 2, 3, "bfloat16", "float32");
    public static final List<CacheGroup> GROUPS = List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, KV_HEADS, HEAD_SIZE),
            new CacheGroup(1, GroupKind.MAMBA, 0, 4, 2, MAMBA2));
    public static final List<LayerSpec> LAYERS = List.of(new LayerSpec("layers.0", 0), new LayerSpec("layers.1", 1), new LayerSpec("layers.2", 1),
            new LayerSpec("layers.3", 0));
    public static final ModelIdentity MODEL = new ModelIdentity("test/hybrid-ssm", "bfloat16", "bfloat16", KV_HEADS, HEAD_SIZE, LAYERS.size(), true);

    private HybridStateEngines()
    {
    }

    public static ModelCacheSpec spec(int ppSize)
    {
        return new ModelCacheSpec(MODEL, BLOCK_TOKENS, 1, GROUPS, LAYERS, ModelCacheSpec.evenStages(LAYERS.size(), ppSize));
    }

    /** Bytes of one KV head of one block: K and V of every token, bf16. */
    public static long headBytes()
    {
        return (long) BLOCK_TOKENS * 2 * HEAD_SIZE * 2;
    }

    /**
     * Builds one rank's geometry.
     *
     * @param engine distinguishes the address ranges of engines.
     * @param rank the rank.
     * @param layers the layers it holds (a subset of {@link #LAYERS}).
     */
    static CacheGeometry geometry(int engine, Rank rank, List<LayerSpec> layers)
    {
        List<Allocation> allocations = new ArrayList<>();
        List<Region> regions = new ArrayList<>();
        for (LayerSpec layer : layers) {
            int index = LAYERS.indexOf(layer);
            long base = 0x1000_0000L * (engine + 1) + 0x10_0000L * (rank.ppRank() * 8 + rank.tpRank()) + 0x1000L * index;
            CacheGroup group = GROUPS.get(layer.groupId());
            long blockBytes = group.stateful() ? group.stateBytes(rank.tpSize()) : headBytes() * KV_HEADS / rank.tpSize();
            int capacity = group.stateful() ? STATE_CAPACITY : KV_CAPACITY;
            allocations.add(new Allocation(base, blockBytes * capacity, MemoryKind.HOST, 0));
            regions.add(new Region(layer.name(), base, blockBytes, blockBytes, capacity, layer.groupId(), MemoryKind.HOST, 0, SplitClass.SPLIT,
                    List.of(layer.name()), List.of()));
        }
        return new CacheGeometry("per-layer", rank, MODEL, BLOCK_TOKENS, 1, GROUPS, allocations, regions);
    }

    /** The value of one byte, from what it means; never 0 so untouched bytes show. */
    public static byte kvByte(int layer, int position, int globalHead, long offset)
    {
        return (byte) (1 + Math.floorMod(layer * 131 + position * 31 + globalHead * 17 + offset * 7, 251));
    }

    public static byte stateByte(int layer, int position, int component, long globalUnit, long offset)
    {
        return (byte) (1 + Math.floorMod(layer * 101 + position * 37 + component * 53 + globalUnit * 13 + offset * 3 + 1, 251));
    }

    /** Calls {@code sink} with (address, expected byte) for every byte a rank holds of a request's blocks. */
    public static void forEachByte(CacheGeometry geometry, int[][] blockIds, ByteSink sink)
    {
        int tp = geometry.rank().tpSize();
        int tpRank = geometry.rank().tpRank();
        for (Region region : geometry.regions()) {
            String name = region.members().getFirst();
            int layer = LAYERS.indexOf(LAYERS.stream().filter(l -> l.name().equals(name)).findFirst().orElseThrow());
            CacheGroup group = GROUPS.get(region.groupId());
            int[] ids = blockIds[region.groupId()];
            for (int position = 0; position < ids.length; position++) {
                long block = region.blockAddress(ids[position]);
                if (group.stateful()) {
                    for (int c = 0; c < group.state().size(); c++) {
                        StateComponent component = group.state().get(c);
                        long unitBytes = component.unitElements() * component.elementBytes();
                        int units = component.splitDim() / tp;
                        long start = block + group.componentOffset(c, tp);
                        for (int u = 0; u < units; u++) {
                            for (long k = 0; k < unitBytes; k++) {
                                sink.accept(start + u * unitBytes + k, stateByte(layer, position, c, (long) tpRank * units + u, k));
                            }
                        }
                    }
                }
                else {
                    int heads = KV_HEADS / tp;
                    for (int h = 0; h < heads; h++) {
                        for (long k = 0; k < headBytes(); k++) {
                            sink.accept(block + h * headBytes() + k, kvByte(layer, position, tpRank * heads + h, k));
                        }
                    }
                }
            }
        }
    }

    /** Receives one byte's address and value. */
    public interface ByteSink
    {
        /**
         * Receives one byte.
         *
         * @param address where it lies.
         * @param value what it holds.
         */
        void accept(long address, byte value);
    }

    /**
     * Pulls one request into a decoder rank through a plan, as the consumer does: for every
     * source slot, its descriptor lists, the request's indices and the resulting copies.
     */
    static void pull(io.kvbridge.core.planner.TransferPlan plan, CacheGeometry decoder, List<CacheGeometry> producerRanks, int[][] decoderIds,
            int[][] producerIds, Memory memory)
    {
        for (int slot = 0; slot < plan.sourceCount(); slot++) {
            int source = plan.tpPlan().sources().get(slot);
            CacheGeometry producer = producerRanks.get(source);
            DescriptorList local = plan.localDescriptors(slot);
            DescriptorList remote = plan.remoteDescriptors(producer);
            BlockSelection mine = BlockSelection.forGroups(decoder.groups()).select(decoderIds);
            BlockSelection theirs = BlockSelection.forGroups(decoder.groups()).select(producerIds);
            int count = plan.indexCount(slot, mine);
            int[] localIndices = new int[count];
            int[] remoteIndices = new int[count];
            int written = plan.indices(slot, mine, localIndices, theirs, remoteIndices);
            DescriptorPairs pairs = new DescriptorPairs(written);
            pairs.resolve(local, localIndices, remote, remoteIndices, written, false);
            for (int i = 0; i < pairs.size(); i++) {
                memory.copy(pairs.remoteAddress(i), pairs.localAddress(i), pairs.length(i));
            }
        }
    }

    /** Routes and plans a decoder rank against the producer ranks of one engine (or stage). */
    static TransferPlan plan(CacheGeometry decoder, CacheGeometry producer, boolean partial)
    {
        List<TransferEntry> entries = partial ? Routing.sharedLayers(LAYERS, decoder, producer) : Routing.route(LAYERS, decoder, producer).entries();
        return TransferPlan.pair(decoder, producer, entries);
    }

    /** Byte arrays standing in for allocations, addressed by absolute address. */
    static final class Memory
    {
        private final java.util.TreeMap<Long, byte[]> segments = new java.util.TreeMap<>();

        void add(CacheGeometry geometry)
        {
            for (Allocation allocation : geometry.allocations()) {
                segments.put(allocation.address(), new byte[Math.toIntExact(allocation.bytes())]);
            }
        }

        byte get(long address)
        {
            var segment = segments.floorEntry(address);
            return segment.getValue()[(int) (address - segment.getKey())];
        }

        void put(long address, byte value)
        {
            var segment = segments.floorEntry(address);
            segment.getValue()[(int) (address - segment.getKey())] = value;
        }

        void copy(long from, long to, long length)
        {
            var source = segments.floorEntry(from);
            var target = segments.floorEntry(to);
            if (from + length > source.getKey() + source.getValue().length || to + length > target.getKey() + target.getValue().length) {
                throw new AssertionError("copy [0x" + Long.toHexString(from) + " -> 0x" + Long.toHexString(to) + ", +" + length + ") leaves its allocation");
            }
            System.arraycopy(source.getValue(), (int) (from - source.getKey()), target.getValue(), (int) (to - target.getKey()), (int) length);
        }

        /** Counts the bytes of a geometry's allocations that differ from the expected image (zero where nothing is expected). */
        int mismatches(CacheGeometry geometry, int[][] blockIds)
        {
            java.util.Map<Long, Byte> expected = new java.util.HashMap<>();
            forEachByte(geometry, blockIds, expected::put);
            int wrong = 0;
            for (Allocation allocation : geometry.allocations()) {
                for (long a = allocation.address(); a < allocation.address() + allocation.bytes(); a++) {
                    if (get(a) != expected.getOrDefault(a, (byte) 0)) {
                        wrong++;
                    }
                }
            }
            return wrong;
        }
    }
}
