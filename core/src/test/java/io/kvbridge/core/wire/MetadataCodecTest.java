package io.kvbridge.core.wire;

import static io.kvbridge.core.wire.Trees.REMOVE;
import static io.kvbridge.core.wire.Trees.assertError;
import static io.kvbridge.core.wire.Trees.encode;
import static io.kvbridge.core.wire.Trees.list;
import static io.kvbridge.core.wire.Trees.map;
import static io.kvbridge.core.wire.Trees.set;
import static io.kvbridge.core.wire.Trees.tree;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Rank;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

@Timeout(30)
final class MetadataCodecTest
{
    private static final WireLimits LIMITS = WireLimits.DEFAULT;

    static List<CacheGeometry> geometries()
    {
        return TestingGeometries.all();
    }

    @ParameterizedTest
    @MethodSource("geometries")
    void roundTripGivesAnEqualGeometry(CacheGeometry geometry)
    {
        RankMetadata metadata = TestingGeometries.metadata("engine-a", geometry);
        RankMetadata decoded = MetadataCodec.decode(MetadataCodec.encode(metadata), LIMITS);
        assertEquals(metadata, decoded);
        assertEquals(geometry, decoded.geometry());
        assertArrayEquals(metadata.transportMetadata(), decoded.transportMetadata());

        HandshakePayload payload = HandshakePayload.of(metadata);
        HandshakePayload decodedPayload = HandshakePayload.decode(payload.encode(), LIMITS);
        assertEquals(payload, decodedPayload);
        assertEquals(HandshakePayload.WIRE_VERSION, decodedPayload.wireVersion());
        assertEquals(CompatibilityHash.of(geometry.model()), decodedPayload.compatibilityHash());
        assertEquals(metadata, MetadataCodec.decode(decodedPayload.metadata(), LIMITS));
    }

    @Test
    void onlyStateGroupsCarryComponentsSoAttentionGroupsEncodeAsBefore()
    {
        Map<String, Object> hybrid = tree(TestingGeometries.metadata("engine-a", TestingGeometries.hybridState()));
        List<Object> groups = list(hybrid.get("groups"));
        assertEquals(Set.of("id", "kind", "window_tokens", "kv_heads", "head_size"), map(groups.get(0)).keySet());
        List<Object> state = list(map(groups.get(1)).get("state"));
        assertEquals(4, state.size());
        assertEquals(Map.of("name", "ssm", "dtype", "float32", "split_dim", 64, "unit_elements", 64L * 128), map(state.get(3)));
    }

    @Test
    void roundTripWithoutTransportOrCapabilities()
    {
        RankMetadata metadata = new RankMetadata("e", TestingGeometries.EPOCH, "", new byte[0], Set.of(), TestingGeometries.pooledHma());
        assertEquals(metadata, MetadataCodec.decode(MetadataCodec.encode(metadata), LIMITS));
    }

    @Test
    void ignoresUnknownKeysAtEveryLevel()
            throws IOException
    {
        RankMetadata metadata = TestingGeometries.metadata("engine-a", TestingGeometries.packedMla());
        Map<String, Object> tree = tree(metadata);
        tree.put("added_in_a_later_version", Map.of("nested", List.of(1L, "two", new byte[] {3}, Map.of("deeper", true))));
        set(tree, "rank.future", "x");
        set(tree, "model.speculative", null);
        set(tree, "groups[0].future", List.of());
        set(tree, "allocations[0].numa_node", 1L);
        set(tree, "regions[0].future", 7L);
        set(tree, "regions[0].packed_members[1].future", "y");
        list(tree.get("capabilities")).add("capability-from-the-future");
        assertEquals(metadata, MetadataCodec.decode(encode(tree), LIMITS));

        // a key that is not a string can never name a field: ignored too
        byte[] known = encode(tree(metadata));
        Map<String, Object> original = tree(metadata);
        MessageBufferPacker packer = MessagePack.newDefaultBufferPacker();
        packer.packMapHeader(original.size() + 1);
        packer.packInt(42).packString("int key");
        for (Map.Entry<String, Object> entry : original.entrySet()) {
            packer.packString(entry.getKey());
            packer.writePayload(encode(entry.getValue()));
        }
        packer.close();
        assertEquals(metadata, MetadataCodec.decode(packer.toByteArray(), LIMITS));
        assertEquals(metadata, MetadataCodec.decode(known, LIMITS));
    }

    @Test
    void fillsDefaultsForAbsentOptionalKeys()
    {
        CacheGeometry geometry = TestingGeometries.perLayer(2, Rank.single());
        RankMetadata full = new RankMetadata("engine-a", TestingGeometries.EPOCH, "", new byte[0], Set.of(), geometry);
        Map<String, Object> tree = tree(full);
        for (String optional : List.of("transport", "transport_metadata", "capabilities", "kernel_blocks_per_logical", "model.hma",
                "groups[0].window_tokens", "allocations[0].memory_kind", "allocations[0].device")) {
            set(tree, optional, REMOVE);
        }
        for (int r = 0; r < 2; r++) {
            for (String optional : List.of("stride", "group_id", "memory_kind", "device", "split", "packed_members")) {
                set(tree, "regions[" + r + "]." + optional, REMOVE);
            }
        }
        assertEquals(full, MetadataCodec.decode(encode(tree), LIMITS));
    }

    @Test
    void treatsNilAsAnAbsentOptionalKey()
    {
        CacheGeometry geometry = TestingGeometries.perLayer(1, Rank.single());
        RankMetadata full = new RankMetadata("engine-a", TestingGeometries.EPOCH, "", new byte[0], Set.of(), geometry);
        Map<String, Object> tree = tree(full);
        set(tree, "transport", null);
        set(tree, "regions[0].stride", null);
        set(tree, "regions[0].packed_members", null);
        assertEquals(full, MetadataCodec.decode(encode(tree), LIMITS));
    }

    static Stream<String> requiredFields()
    {
        return Stream.of("engine_id", "epoch", "rank", "rank.pp_rank", "rank.pp_size", "rank.tp_rank", "rank.tp_size", "layout", "block_tokens", "model",
                "model.model", "model.dtype", "model.cache_dtype", "model.total_kv_heads", "model.head_size", "model.layer_count", "groups",
                "groups[0].id", "groups[0].kind", "groups[0].kv_heads", "groups[0].head_size", "allocations", "allocations[0].address",
                "allocations[0].bytes", "regions", "regions[0].name", "regions[0].base", "regions[0].block_bytes", "regions[0].capacity",
                "regions[0].members", "regions[0].packed_members[2].layer", "regions[0].packed_members[0].offset",
                "regions[0].packed_members[1].page_bytes");
    }

    static Stream<Arguments> requiredFieldsAbsentOrNil()
    {
        return requiredFields().flatMap(field -> Stream.of(Arguments.of(field, REMOVE), Arguments.of(field, null)));
    }

    @ParameterizedTest
    @MethodSource("requiredFieldsAbsentOrNil")
    void rejectsAnAbsentOrNilRequiredKeyNamingIt(String field, Object absentOrNil)
    {
        Map<String, Object> tree = tree(TestingGeometries.metadata("engine-a", TestingGeometries.packedMla()));
        byte[] bytes = encode(set(tree, field, absentOrNil));
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, LIMITS), "field " + field + ":", "required field is missing");
    }

    static Stream<Arguments> wrongTypes()
    {
        return Stream.of(
                Arguments.of("engine_id", 5L, "engine_id", "expected a string, got an integer"),
                Arguments.of("epoch", "9f86d081884c7d65", "epoch", "expected an integer within the signed 64-bit range, got a string"),
                Arguments.of("block_tokens", "16", "block_tokens", "expected an integer within the signed 64-bit range, got a string"),
                Arguments.of("rank", List.of(0L, 1L), "rank", "expected a map, got an array"),
                Arguments.of("regions", Map.of("name", "x"), "regions", "expected an array, got a map"),
                Arguments.of("regions[0].base", "0x1000", "regions[0].base", "expected an integer"),
                Arguments.of("regions[0].members", List.of(1L), "regions[0].members[0]", "expected a string, got an integer"),
                Arguments.of("regions[0].capacity", 1L << 40, "regions[0].capacity", "value=1099511627776 is outside the 32-bit integer range"),
                Arguments.of("regions[0].memory_kind", "gpu", "regions[0].memory_kind", "value=gpu is not one of [host, device]"),
                Arguments.of("regions[0].split", 1L, "regions[0].split", "expected a string, got an integer"),
                Arguments.of("groups", List.of("full"), "groups[0]", "expected a map, got a string"),
                Arguments.of("groups[0].kind", "linear", "groups[0].kind", "value=linear is not one of [full_attention, sliding_window, mla, mamba]"),
                Arguments.of("model.hma", "yes", "model.hma", "expected a boolean, got a string"),
                Arguments.of("model.head_size", 1.5, "model.head_size", "expected an integer within the signed 64-bit range, got a float"),
                Arguments.of("transport_metadata", "not bytes", "transport_metadata", "expected binary, got a string"),
                Arguments.of("capabilities", "push", "capabilities", "expected an array, got a string"));
    }

    @ParameterizedTest
    @MethodSource("wrongTypes")
    void rejectsAWrongFieldTypeNamingTheField(String field, Object value, String reported, String problem)
    {
        Map<String, Object> tree = tree(TestingGeometries.metadata("engine-a", TestingGeometries.deviceRegions()));
        byte[] bytes = value instanceof Double d ? withDouble(tree, field, d) : encode(set(tree, field, value));
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, LIMITS), "peer metadata field " + reported + ": " + problem);
    }

    private static byte[] withDouble(Map<String, Object> tree, String field, double value)
    {
        // the tree writer has no floats: write a marker string, then swap its encoding for a float64
        String marker = "FLOAT-MARKER";
        byte[] bytes = encode(set(tree, field, marker));
        byte[] markerBytes = encode(marker);
        int at = indexOf(bytes, markerBytes);
        byte[] floatBytes = new byte[9];
        floatBytes[0] = (byte) 0xcb;
        long bits = Double.doubleToLongBits(value);
        for (int i = 0; i < 8; i++) {
            floatBytes[1 + i] = (byte) (bits >>> (56 - 8 * i));
        }
        byte[] result = new byte[bytes.length - markerBytes.length + floatBytes.length];
        System.arraycopy(bytes, 0, result, 0, at);
        System.arraycopy(floatBytes, 0, result, at, floatBytes.length);
        System.arraycopy(bytes, at + markerBytes.length, result, at + floatBytes.length, bytes.length - at - markerBytes.length);
        return result;
    }

    private static int indexOf(byte[] haystack, byte[] needle)
    {
        for (int i = 0; i <= haystack.length - needle.length; i++) {
            if (Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
                return i;
            }
        }
        throw new AssertionError("marker not found");
    }

    @Test
    void rejectsAnIntegerBeyondTheSigned64BitRange()
            throws IOException
    {
        Map<String, Object> tree = tree(TestingGeometries.metadata("engine-a", TestingGeometries.perLayer(1, Rank.single())));
        byte[] bytes = encode(set(tree, "regions[0].base", "BIG-MARKER"));
        byte[] marker = encode("BIG-MARKER");
        MessageBufferPacker packer = MessagePack.newDefaultBufferPacker();
        packer.packBigInteger(BigInteger.ONE.shiftLeft(63));
        packer.close();
        byte[] big = packer.toByteArray();
        int at = indexOf(bytes, marker);
        byte[] result = new byte[bytes.length - marker.length + big.length];
        System.arraycopy(bytes, 0, result, 0, at);
        System.arraycopy(big, 0, result, at, big.length);
        System.arraycopy(bytes, at + marker.length, result, at + big.length, bytes.length - at - marker.length);
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(result, LIMITS), "field regions[0].base",
                "got an integer beyond the signed 64-bit range");
    }

    static Stream<Arguments> invalidGeometries()
    {
        return Stream.of(
                Arguments.of("regions[0].capacity", -1L, "regions[0]", "capacity=-1 is not positive"),
                Arguments.of("regions[0].capacity", 0L, "regions[0]", "capacity=0 is not positive"),
                Arguments.of("regions[0].stride", 1L, "regions[0]", "is smaller than blockBytes"),
                Arguments.of("regions[0].block_bytes", -4L, "regions[0]", "blockBytes=-4 is not positive"),
                Arguments.of("regions[0].base", Long.MAX_VALUE - 10, "regions[0]", "overflows a 64-bit address"),
                Arguments.of("regions[0].base", -1L, "regions[0]", "base=-1 is not positive"),
                Arguments.of("regions[0].group_id", -2L, "regions[0]", "groupId=-2 is below -1"),
                Arguments.of("regions[0].group_id", 5L, "geometry", "groupId=5 but only 1 groups exist"),
                Arguments.of("regions[0].members", List.of(), "regions[0]", "has no member layers"),
                Arguments.of("regions[0].members", List.of("a", "a"), "regions[0]", "lists layer a twice"),
                Arguments.of("regions[0].memory_kind", "host", "regions[0]", "device=3 given for host memory"),
                Arguments.of("regions[1].base", TestingGeometries.DEVICE_BASE - 4096, "geometry", "lies inside no allocation"),
                Arguments.of("regions[2].members", List.of("model.layers.0.attn"), "geometry", "layer model.layers.0.attn is in two regions"),
                Arguments.of("allocations[0].bytes", 0L, "allocations[0]", "bytes=0 is not positive"),
                Arguments.of("allocations[0].device", -1L, "allocations[0]", "device=-1 is negative"),
                Arguments.of("allocations[1].address", TestingGeometries.DEVICE_BASE, "geometry", "lies inside no allocation"),
                Arguments.of("rank.pp_rank", 1L, "rank", "ppRank=1 is outside [0, ppSize=1)"),
                Arguments.of("rank.tp_size", 0L, "rank", "tpSize=0 is not positive"),
                Arguments.of("groups[0].id", 1L, "geometry", "has id=1"),
                Arguments.of("groups[0].window_tokens", 128L, "groups[0]", "windowTokens=128 given for a FULL_ATTENTION group"),
                Arguments.of("model.total_kv_heads", 0L, "model", "totalKvHeads=0 is not positive"),
                Arguments.of("model.model", "", "model", "model name is empty"),
                Arguments.of("block_tokens", 0L, "geometry", "blockTokens=0 is not positive"),
                Arguments.of("kernel_blocks_per_logical", -3L, "geometry", "kernelBlocksPerLogical=-3 is not positive"),
                Arguments.of("engine_id", "", "engine_id", "engineId is empty"));
    }

    @Test
    void anEpochKeepsAll64BitsAndZeroIsRefused()
    {
        RankMetadata metadata = TestingGeometries.metadata("engine-a", TestingGeometries.perLayer(1, Rank.single()));
        assertEquals(TestingGeometries.EPOCH, MetadataCodec.decode(MetadataCodec.encode(metadata), LIMITS).epoch());
        byte[] zero = encode(set(tree(metadata), "epoch", 0L));
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(zero, LIMITS), "peer metadata field epoch: is 0, which no engine draws");
        assertError(ErrorCode.INVALID_ARGUMENT, () -> new RankMetadata("engine-a", RankMetadata.UNKNOWN_EPOCH, "", new byte[0], Set.of(),
                metadata.geometry()), "epoch=0 of engine engine-a is reserved");
        assertNotEquals(RankMetadata.newEpoch(), RankMetadata.newEpoch());
    }

    @ParameterizedTest
    @MethodSource("invalidGeometries")
    void revalidatesRecordsAndNamesTheField(String field, Object value, String reported, String problem)
    {
        Map<String, Object> tree = tree(TestingGeometries.metadata("engine-a", TestingGeometries.deviceRegions()));
        if (field.startsWith("rank.")) {
            tree = tree(TestingGeometries.metadata("engine-a", TestingGeometries.perLayer(2, Rank.single())));
        }
        byte[] bytes = encode(set(tree, field, value));
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, LIMITS), "peer metadata field " + reported + " is invalid", problem);
    }

    @Test
    void rejectsOverlappingAllocations()
    {
        Map<String, Object> tree = tree(TestingGeometries.metadata("engine-a", TestingGeometries.deviceRegions()));
        set(tree, "allocations[1].memory_kind", "device");
        set(tree, "allocations[1].device", 3L);
        set(tree, "allocations[1].address", TestingGeometries.DEVICE_BASE + 4096);
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(encode(tree), LIMITS), "field geometry is invalid", "overlap");
    }

    @Test
    void revalidatesPackedMembers()
    {
        Map<String, Object> tree = tree(TestingGeometries.metadata("engine-a", TestingGeometries.packedMla()));
        list(map(list(tree.get("regions")).get(0)).get("packed_members")).removeLast();
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(encode(tree), LIMITS), "regions[0] is invalid",
                "2 packed members for 3 member layers");

        Map<String, Object> beyond = tree(TestingGeometries.metadata("engine-a", TestingGeometries.packedMla()));
        set(beyond, "regions[0].packed_members[2].offset", 1L << 30);
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(encode(beyond), LIMITS), "regions[0] is invalid", "exceeds blockBytes");
    }

    @Test
    void ignoresUnknownCapabilityNames()
    {
        Map<String, Object> tree = tree(TestingGeometries.metadata("engine-a", TestingGeometries.pooledHma()));
        tree.put("capabilities", new ArrayList<>(List.of("pull", "teleport", "packed-mla")));
        RankMetadata decoded = MetadataCodec.decode(encode(tree), LIMITS);
        assertEquals(EnumSet.of(PeerCapability.PULL, PeerCapability.PACKED_MLA), decoded.capabilities());
    }

    @ParameterizedTest
    @ValueSource(strings = {"hello, this is not msgpack", "\u00c1", "{\"engine_id\": \"json\"}"})
    void rejectsBytesThatAreNotAMsgpackMap(String text)
    {
        byte[] bytes = text.getBytes(StandardCharsets.ISO_8859_1);
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, LIMITS), "peer metadata");
    }

    @Test
    void rejectsEmptyTruncatedAndTrailingInput()
    {
        byte[] valid = MetadataCodec.encode(TestingGeometries.metadata("engine-a", TestingGeometries.pooledHma()));
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(new byte[0], LIMITS), "is empty");
        for (int length = 1; length < valid.length; length += 7) {
            byte[] truncated = Arrays.copyOf(valid, length);
            assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(truncated, LIMITS), "peer metadata");
        }
        byte[] trailing = Arrays.copyOf(valid, valid.length + 1);
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(trailing, LIMITS), "1 bytes follow the top-level map");
    }

    @Test
    void rejectsDuplicateKeys()
            throws IOException
    {
        MessageBufferPacker packer = MessagePack.newDefaultBufferPacker();
        packer.packMapHeader(2).packString("engine_id").packString("a").packString("engine_id").packString("b");
        packer.close();
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(packer.toByteArray(), LIMITS), "has the key 'engine_id' twice");
    }

    @Test
    void rejectsInvalidUtf8()
    {
        byte[] bytes = {(byte) 0x81, (byte) 0xa2, (byte) 0xc3, (byte) 0x28, 0x01};
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, LIMITS), "is not valid UTF-8");
    }

    @Test
    void enforcesListStringBinaryNestingAndFrameLimits()
    {
        RankMetadata metadata = TestingGeometries.metadata("engine-a", TestingGeometries.perLayer(20, Rank.single()));
        byte[] bytes = MetadataCodec.encode(metadata);
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, new WireLimits(1 << 20, 19, 4096, 4096, 16)),
                "array of 20 entries exceeds maxListLength=19");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, new WireLimits(1 << 20, 1000, 20, 4096, 16)),
                "exceeds maxStringBytes=20");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, new WireLimits(1 << 20, 1000, 4096, 4, 16)),
                "binary value of 10 bytes exceeds maxBinaryBytes=4");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, new WireLimits(1 << 20, 1000, 4096, 4096, 2)),
                "nested 3 deep exceeds maxNesting=2");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, new WireLimits(bytes.length - 1, 1000, 4096, 4096, 16)),
                "exceeds maxFrameBytes=" + (bytes.length - 1));
        assertEquals(metadata, MetadataCodec.decode(bytes, new WireLimits(bytes.length, 20, 64, 10, 4)));

        Map<String, Object> deep = tree(metadata);
        Object nested = List.of();
        for (int i = 0; i < 40; i++) {
            nested = List.of(nested);
        }
        deep.put("unknown", nested);
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(encode(deep), LIMITS), "exceeds maxNesting=16");
    }

    static Stream<Arguments> forgedHeaders()
    {
        return Stream.of(
                Arguments.of(new byte[] {(byte) 0xdb, -1, -1, -1, -1}, "MessageSizeException"),
                Arguments.of(new byte[] {(byte) 0xdb, 0x7f, -1, -1, -1}, "string"),
                Arguments.of(new byte[] {(byte) 0xc6, 0x00, 0x10, 0x00, 0x00}, "binary value"),
                Arguments.of(new byte[] {(byte) 0xdd, 0x00, 0x00, -1, -1}, "array"),
                Arguments.of(new byte[] {(byte) 0xdf, 0x00, 0x00, 0x01, 0x00}, "map"),
                Arguments.of(new byte[] {(byte) 0xc9, 0x7f, -1, -1, -1, 1}, "extension value"));
    }

    @ParameterizedTest
    @MethodSource("forgedHeaders")
    void refusesLengthsBeyondTheInputWithoutAllocating(byte[] header, String kind)
    {
        // {"engine_id": <forged value>}
        byte[] prefix = {(byte) 0x81, (byte) 0xa9, 'e', 'n', 'g', 'i', 'n', 'e', '_', 'i', 'd'};
        byte[] bytes = new byte[prefix.length + header.length];
        System.arraycopy(prefix, 0, bytes, 0, prefix.length);
        System.arraycopy(header, 0, bytes, prefix.length, header.length);
        long before = AllocationMeter.allocatedBytes();
        assertError(ErrorCode.PROTOCOL_ERROR, () -> MetadataCodec.decode(bytes, LIMITS), kind);
        assertTrue(AllocationMeter.allocatedBytes() - before < 4 << 20, "decoding a forged header allocated "
                + (AllocationMeter.allocatedBytes() - before) + " bytes");
    }
}
