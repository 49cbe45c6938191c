package io.kvbridge.core.wire;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
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
import io.kvbridge.spi.geometry.StateComponent;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Encodes and decodes {@link RankMetadata} as a msgpack map keyed by field name (see the wire
 * protocol document for the field table). Decoding treats the bytes as hostile: unknown keys are
 * ignored, absent optional keys take their defaults, absent required keys and wrong types are
 * protocol errors naming the field, and every record is rebuilt through its validating constructor,
 * a failure of which is a protocol error naming the field too.
 */
public final class MetadataCodec
{
    /** Names the inner metadata in messages. */
    static final String WHAT = "peer metadata";

    private MetadataCodec()
    {
    }

    /**
     * Encodes a rank's metadata.
     *
     * @param metadata what the rank advertises.
     * @return the msgpack bytes.
     */
    public static byte[] encode(RankMetadata metadata)
    {
        return new WireWriter().value(toTree(metadata)).toByteArray();
    }

    /**
     * Lays a rank's metadata out as the tree that is encoded: maps keyed by wire field name, in
     * wire order, holding strings, longs, booleans, enum constants, lists and byte arrays.
     *
     * @param metadata what the rank advertises.
     * @return the tree.
     */
    static Map<String, Object> toTree(RankMetadata metadata)
    {
        requireNonNull(metadata, "metadata is null");
        CacheGeometry geometry = metadata.geometry();
        Rank rank = geometry.rank();
        ModelIdentity model = geometry.model();
        Map<String, Object> tree = new LinkedHashMap<>();
        tree.put("engine_id", metadata.engineId());
        tree.put("epoch", metadata.epoch());
        tree.put("rank", fields("pp_rank", rank.ppRank(), "pp_size", rank.ppSize(), "tp_rank", rank.tpRank(), "tp_size", rank.tpSize()));
        tree.put("transport", metadata.transport());
        tree.put("transport_metadata", metadata.transportMetadata());
        tree.put("capabilities", PeerCapability.wireNames(metadata.capabilities()));
        tree.put("layout", geometry.layoutName());
        tree.put("block_tokens", geometry.blockTokens());
        tree.put("kernel_blocks_per_logical", geometry.kernelBlocksPerLogical());
        tree.put("model", fields("model", model.model(), "dtype", model.dtype(), "cache_dtype", model.cacheDtype(),
                "total_kv_heads", model.totalKvHeads(), "head_size", model.headSize(), "layer_count", model.layerCount(), "hma", model.hma()));
        tree.put("groups", geometry.groups().stream().map(MetadataCodec::groupTree).toList());
        tree.put("allocations", geometry.allocations().stream()
                .map(allocation -> fields("address", allocation.address(), "bytes", allocation.bytes(), "memory_kind", allocation.kind(),
                        "device", allocation.device()))
                .toList());
        tree.put("regions", geometry.regions().stream().map(MetadataCodec::regionTree).toList());
        return tree;
    }

    private static Map<String, Object> groupTree(CacheGroup group)
    {
        Map<String, Object> tree = fields("id", group.id(), "kind", group.kind(), "window_tokens", group.windowTokens(), "kv_heads", group.kvHeads(),
                "head_size", group.headSize());
        if (group.stateful()) {
            // only state groups carry components, so attention geometries encode as they always did
            tree.put("state", group.state().stream()
                    .map(component -> fields("name", component.name(), "dtype", component.dtype(), "split_dim", component.splitDim(),
                            "unit_elements", component.unitElements()))
                    .toList());
        }
        return tree;
    }

    private static Map<String, Object> regionTree(Region region)
    {
        Map<String, Object> tree = fields("name", region.name(), "base", region.base(), "block_bytes", region.blockBytes(),
                "stride", region.stride(), "capacity", region.capacity(), "group_id", region.groupId(), "memory_kind", region.memoryKind(),
                "device", region.device(), "split", region.split());
        if (region.part().plane()) {
            // absent means JOINT, so peers that predate planes read the regions they always did
            tree.put("kv_part", region.part());
        }
        tree.put("members", region.members());
        tree.put("packed_members", region.packedMembers().stream()
                .map(member -> fields("layer", member.layer(), "offset", member.offset(), "page_bytes", member.pageBytes()))
                .toList());
        if (!region.runs().isEmpty()) {
            // absent means one strided run, so peers that predate runs read the regions they always did
            tree.put("block_runs", region.runs().stream().map(run -> fields("base", run.base(), "blocks", run.blocks())).toList());
        }
        return tree;
    }

    private static Map<String, Object> fields(Object... keysAndValues)
    {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            map.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return map;
    }

    /**
     * Decodes a rank's metadata from untrusted bytes.
     *
     * @param bytes the msgpack map.
     * @param limits bounds to enforce.
     * @return the metadata, every record re-validated.
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} for any malformed, oversized
     *     or invalid input.
     */
    public static RankMetadata decode(byte[] bytes, WireLimits limits)
    {
        WireMap map = WireDecoder.decodeMap(bytes, limits, WHAT);
        String engineId = map.requireString("engine_id");
        // required: a peer that names no epoch could restart unnoticed, which is what epochs prevent
        long epoch = map.requireLong("epoch");
        if (epoch == RankMetadata.UNKNOWN_EPOCH) {
            throw map.error("epoch", "is 0, which no engine draws (the peer's kvbridge is broken or the metadata was forged)");
        }
        Rank rank = decodeRank(map.requireMap("rank"));
        String transport = map.optionalString("transport", "");
        byte[] transportMetadata = map.optionalBinary("transport_metadata");
        Set<PeerCapability> capabilities = EnumSet.noneOf(PeerCapability.class);
        for (String name : map.optionalStrings("capabilities")) {
            PeerCapability capability = PeerCapability.fromWireName(name);
            if (capability != null) {
                capabilities.add(capability);
            }
        }
        String layout = map.requireString("layout");
        int blockTokens = map.requireInt("block_tokens");
        int kernelBlocksPerLogical = map.optionalInt("kernel_blocks_per_logical", 1);
        ModelIdentity model = decodeModel(map.requireMap("model"));
        List<CacheGroup> groups = new ArrayList<>();
        for (WireMap group : map.requireMaps("groups")) {
            List<StateComponent> state = new ArrayList<>();
            for (WireMap component : group.optionalMaps("state")) {
                state.add(rebuild(component, component.path(), () -> new StateComponent(component.requireString("name"), component.requireString("dtype"),
                        component.requireInt("split_dim"), component.requireLong("unit_elements"))));
            }
            groups.add(rebuild(group, group.path(), () -> new CacheGroup(
                    group.requireInt("id"),
                    group.requireEnum("kind", GroupKind.class),
                    group.optionalInt("window_tokens", 0),
                    group.requireInt("kv_heads"),
                    group.requireInt("head_size"),
                    state)));
        }
        List<Allocation> allocations = new ArrayList<>();
        for (WireMap allocation : map.requireMaps("allocations")) {
            allocations.add(rebuild(allocation, allocation.path(), () -> new Allocation(
                    allocation.requireLong("address"),
                    allocation.requireLong("bytes"),
                    allocation.optionalEnum("memory_kind", MemoryKind.class, MemoryKind.HOST),
                    allocation.optionalInt("device", 0))));
        }
        List<Region> regions = new ArrayList<>();
        for (WireMap region : map.requireMaps("regions")) {
            regions.add(decodeRegion(region));
        }
        CacheGeometry geometry = rebuild(map, "geometry", () -> new CacheGeometry(layout, rank, model, blockTokens, kernelBlocksPerLogical,
                groups, allocations, regions));
        return rebuild(map, "engine_id", () -> new RankMetadata(engineId, epoch, transport, transportMetadata, capabilities, geometry));
    }

    private static Rank decodeRank(WireMap rank)
    {
        return rebuild(rank, rank.path(), () -> new Rank(rank.requireInt("pp_rank"), rank.requireInt("pp_size"), rank.requireInt("tp_rank"),
                rank.requireInt("tp_size")));
    }

    /**
     * Decodes a model identity map, as embedded in the metadata.
     *
     * @param model the decoded map.
     * @return the identity.
     */
    static ModelIdentity decodeModel(WireMap model)
    {
        return rebuild(model, model.path(), () -> new ModelIdentity(
                model.requireString("model"),
                model.requireString("dtype"),
                model.requireString("cache_dtype"),
                model.requireInt("total_kv_heads"),
                model.requireInt("head_size"),
                model.requireInt("layer_count"),
                model.optionalBoolean("hma", false)));
    }

    private static Region decodeRegion(WireMap region)
    {
        long blockBytes = region.requireLong("block_bytes");
        List<PackedMember> packed = new ArrayList<>();
        for (WireMap member : region.optionalMaps("packed_members")) {
            packed.add(rebuild(member, member.path(), () -> new PackedMember(member.requireString("layer"), member.requireLong("offset"),
                    member.requireLong("page_bytes"))));
        }
        List<BlockRun> runs = new ArrayList<>();
        for (WireMap run : region.optionalMaps("block_runs")) {
            runs.add(rebuild(run, run.path(), () -> new BlockRun(run.requireLong("base"), run.requireInt("blocks"))));
        }
        return rebuild(region, region.path(), () -> new Region(
                region.requireString("name"),
                region.requireLong("base"),
                blockBytes,
                region.optionalLong("stride", blockBytes),
                region.requireInt("capacity"),
                region.optionalInt("group_id", 0),
                region.optionalEnum("memory_kind", MemoryKind.class, MemoryKind.HOST),
                region.optionalInt("device", 0),
                region.optionalEnum("split", SplitClass.class, SplitClass.SPLIT),
                region.requireStrings("members"),
                packed,
                region.optionalEnum("kv_part", KvPart.class, KvPart.JOINT),
                runs));
    }

    /**
     * Runs a record's validating constructor on peer data, turning a validation failure into a
     * protocol error that names the field. Protocol errors raised while reading fields pass through.
     */
    private static <T> T rebuild(WireMap map, String field, Supplier<T> constructor)
    {
        try {
            return constructor.get();
        }
        catch (KvBridgeException e) {
            if (e.code() == ErrorCode.PROTOCOL_ERROR) {
                throw e;
            }
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, map.what() + " field " + field + " is invalid: " + e.getMessage()
                    + " (the peer advertised an inconsistent geometry; fix the peer's layout or allocations)", e);
        }
    }
}
