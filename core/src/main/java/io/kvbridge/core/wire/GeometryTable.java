package io.kvbridge.core.wire;

import static java.util.Objects.requireNonNull;

import io.kvbridge.json.internal.JsonWriter;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.StateComponent;
import io.kvbridge.spi.memory.Allocation;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Renders what a peer's rank advertises for people (an aligned text table) and for tools (a tree
 * of maps, lists, strings, numbers and booleans that any JSON library writes, or {@link #toJson}).
 * The tree uses the wire field names, so it reads like the protocol document.
 */
public final class GeometryTable
{
    private static final int MAX_LISTED_LAYERS = 3;

    private GeometryTable()
    {
    }

    /**
     * Renders a rank's metadata as text: a header with engine, rank, transport, model and layout,
     * then one table each for groups, allocations and regions.
     *
     * @param metadata what the rank advertises.
     * @return the text, lines ending in {@code \n}.
     */
    public static String render(RankMetadata metadata)
    {
        requireNonNull(metadata, "metadata is null");
        CacheGeometry geometry = metadata.geometry();
        ModelIdentity model = geometry.model();
        List<List<String>> header = new ArrayList<>();
        header.add(List.of("engine", metadata.engineId()));
        header.add(List.of("epoch", RankMetadata.formatEpoch(metadata.epoch())));
        header.add(List.of("rank", geometry.rank().toString()));
        header.add(List.of("transport", (metadata.transport().isEmpty() ? "(none)" : metadata.transport())
                + " (" + metadata.transportMetadata().length + " bytes of metadata)"));
        header.add(List.of("capabilities", String.join(", ", PeerCapability.wireNames(metadata.capabilities()))));
        header.add(List.of("model", model.model()));
        header.add(List.of("identity", String.format(Locale.ROOT, "dtype=%s cache_dtype=%s total_kv_heads=%d head_size=%d layer_count=%d hma=%s",
                model.dtype(), model.cacheDtype(), model.totalKvHeads(), model.headSize(), model.layerCount(), model.hma())));
        header.add(List.of("compatibility hash", CompatibilityHash.of(model)));
        header.add(List.of("layout", String.format(Locale.ROOT, "%s block_tokens=%d kernel_blocks_per_logical=%d",
                geometry.layoutName(), geometry.blockTokens(), geometry.kernelBlocksPerLogical())));
        StringBuilder out = new StringBuilder();
        table(out, null, header);

        List<List<String>> groups = new ArrayList<>();
        for (CacheGroup group : geometry.groups()) {
            groups.add(List.of(Integer.toString(group.id()), WireMap.wireName(group.kind()), Integer.toString(group.windowTokens()),
                    Integer.toString(group.kvHeads()), Integer.toString(group.headSize())));
        }
        out.append("\ngroups\n");
        table(out, List.of("id", "kind", "window", "kv_heads", "head_size"), groups);
        List<List<String>> components = new ArrayList<>();
        for (CacheGroup group : geometry.groups()) {
            for (int c = 0; c < group.state().size(); c++) {
                StateComponent component = group.state().get(c);
                components.add(List.of(Integer.toString(group.id()), component.name(), component.dtype(), Integer.toString(component.splitDim()),
                        Long.toString(component.unitElements()), Long.toString(group.componentOffset(c, geometry.rank().tpSize())),
                        Long.toString(component.bytesPerRank(geometry.rank().tpSize()))));
            }
        }
        if (!components.isEmpty()) {
            out.append("\nstate components (offset and bytes on this rank)\n");
            table(out, List.of("group", "component", "dtype", "split_dim", "unit_elements", "offset", "bytes"), components);
        }

        List<List<String>> allocations = new ArrayList<>();
        for (int i = 0; i < geometry.allocations().size(); i++) {
            Allocation allocation = geometry.allocations().get(i);
            allocations.add(List.of(Integer.toString(i), WireMap.wireName(allocation.kind()), Integer.toString(allocation.device()),
                    hex(allocation.address()), Long.toString(allocation.bytes())));
        }
        out.append("\nallocations\n");
        table(out, List.of("#", "kind", "device", "address", "bytes"), allocations);

        List<List<String>> regions = new ArrayList<>();
        for (int i = 0; i < geometry.regions().size(); i++) {
            Region region = geometry.regions().get(i);
            regions.add(List.of(Integer.toString(i), region.name(), WireMap.wireName(region.memoryKind()), Integer.toString(region.device()),
                    Integer.toString(region.groupId()), WireMap.wireName(region.split()), hex(region.base()), Long.toString(region.blockBytes()),
                    Long.toString(region.stride()), Integer.toString(region.capacity()), layers(region.members()), packed(region)));
        }
        out.append("\nregions (").append(geometry.regions().size()).append(", ").append(geometry.totalCapacity()).append(" blocks)\n");
        table(out, List.of("#", "name", "kind", "device", "group", "split", "base", "block_bytes", "stride", "capacity", "layers", "packed"),
                regions);
        return out.toString();
    }

    /**
     * Lays a rank's metadata out as JSON-friendly data: maps with the wire field names, the
     * transport metadata as base64, and the compatibility hash added.
     *
     * @param metadata what the rank advertises.
     * @return a tree of maps, lists, strings, longs, integers and booleans.
     */
    public static Map<String, Object> toData(RankMetadata metadata)
    {
        Map<String, Object> data = new LinkedHashMap<>();
        MetadataCodec.toTree(metadata).forEach((key, value) -> data.put(key, jsonFriendly(value)));
        // as the transfer parameters carry it: 64 bits a JSON number would round in some readers
        data.put("epoch", RankMetadata.formatEpoch(metadata.epoch()));
        data.put("transport_metadata_bytes", metadata.transportMetadata().length);
        data.put("compatibility_hash", CompatibilityHash.of(metadata.geometry().model()));
        return data;
    }

    /**
     * Writes {@link #toData} as indented JSON.
     *
     * @param metadata what the rank advertises.
     * @return the JSON text.
     */
    public static String toJson(RankMetadata metadata)
    {
        return JsonWriter.write(toData(metadata), false, 2);
    }

    private static Object jsonFriendly(Object value)
    {
        return switch (value) {
            case byte[] bytes -> Base64.getEncoder().encodeToString(bytes);
            case Enum<?> constant -> WireMap.wireName(constant);
            case Map<?, ?> map -> {
                Map<String, Object> copy = new LinkedHashMap<>();
                map.forEach((key, entry) -> copy.put((String) key, jsonFriendly(entry)));
                yield copy;
            }
            case List<?> list -> list.stream().map(GeometryTable::jsonFriendly).toList();
            default -> value;
        };
    }

    private static String layers(List<String> members)
    {
        if (members.size() <= MAX_LISTED_LAYERS) {
            return String.join(",", members);
        }
        return members.getFirst() + " .. " + members.getLast() + " (" + members.size() + ")";
    }

    private static String packed(Region region)
    {
        if (!region.packed()) {
            return "-";
        }
        List<String> pages = new ArrayList<>();
        for (PackedMember member : region.packedMembers()) {
            pages.add(member.offset() + "+" + member.pageBytes());
        }
        return pages.size() <= MAX_LISTED_LAYERS ? String.join(",", pages) : pages.size() + " pages";
    }

    private static String hex(long value)
    {
        return "0x" + Long.toHexString(value);
    }

    private static void table(StringBuilder out, List<String> header, List<List<String>> rows)
    {
        List<List<String>> all = new ArrayList<>();
        if (header != null) {
            all.add(header);
        }
        all.addAll(rows);
        int columns = all.isEmpty() ? 0 : all.getFirst().size();
        int[] widths = new int[columns];
        for (List<String> row : all) {
            for (int c = 0; c < columns; c++) {
                widths[c] = Math.max(widths[c], row.get(c).length());
            }
        }
        for (List<String> row : all) {
            StringBuilder line = new StringBuilder();
            for (int c = 0; c < columns; c++) {
                line.append(row.get(c));
                if (c < columns - 1) {
                    line.repeat(' ', widths[c] - row.get(c).length() + 2);
                }
            }
            out.append(line.toString().stripTrailing()).append('\n');
        }
    }
}
