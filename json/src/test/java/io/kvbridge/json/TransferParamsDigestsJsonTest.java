package io.kvbridge.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockDigests;
import io.kvbridge.api.BlockIds;
import io.kvbridge.api.PullKey;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The optional {@code kvbridge.digests} of the parameters' JSON: round trip, absence, and hostile values. */
final class TransferParamsDigestsJsonTest
{
    private static final BlockIds BLOCKS = BlockIds.of(new int[] {1, 2, 3}, new int[] {7, 8});
    private static final TransferParams PLAIN = new TransferParams("prefill-0", "req-1", List.of(new SideChannelAddress("10.0.0.5", 5600)), 1, 1,
            BLOCKS, EnumSet.of(TransferMode.PUSH, TransferMode.PULL), 30_000, 81_234_567_890L, List.of(0x9f86d081884c7d65L), List.of(PullKey.NONE));
    private static final TransferParams DIGESTED = PLAIN.withDigests(BlockDigests.of(0x5c3e9a01, new int[] {0xdeadbeef, 0x12345678, -1},
            new int[] {0x01234567, 0}));

    @Test
    void digestsRoundTripAsUnsignedIntegersUnderKvbridge()
    {
        String json = TransferParamsJson.write(DIGESTED);
        assertTrue(json.contains("\"digests\": {\"shape\": \"5c3e9a01\", \"crc32c\": [[3735928559, 305419896, 4294967295], [19088743, 0]]}"), json);
        TransferParams read = TransferParamsJson.read(json);
        assertEquals(DIGESTED, read);
        assertEquals(0xdeadbeef, read.digests().get(0, 0));
        assertEquals(0x5c3e9a01, read.digests().shape());
        assertEquals(DIGESTED, TransferParamsJson.fromMap(TransferParamsJson.toMap(DIGESTED)));
    }

    @Test
    void parametersWithoutDigestsWriteNoKeyAndReadAsNone()
    {
        String json = TransferParamsJson.write(PLAIN);
        assertFalse(json.contains("digests"), json);
        assertTrue(TransferParamsJson.read(json).digests().isNone());
        assertEquals(PLAIN, TransferParamsJson.read(json));
    }

    @Test
    void theCopiesARouterMakesKeepTheDigests()
    {
        assertEquals(DIGESTED.digests(), DIGESTED.withRequestId("other").digests());
        assertEquals(DIGESTED.digests(), DIGESTED.withEpochsOf(PLAIN).digests());
        assertFalse(DIGESTED.toString().contains("3735928559") || DIGESTED.toString().contains("deadbeef"), DIGESTED.toString());
    }

    @Test
    void aCountOtherThanTheBlockIdsIsRefused()
    {
        assertProblem(digests -> groups(digests).get(1).add(5L),
                "kvbridge.digests.crc32c group 1 has 3 digests but 2 block ids (expected: one digest per block id)");
        assertProblem(digests -> groups(digests).removeLast(),
                "kvbridge.digests.crc32c has 1 cache groups but remote_block_ids has 2");
        KvBridgeException direct = assertThrows(KvBridgeException.class, () -> PLAIN.withDigests(BlockDigests.of(1, new int[] {1, 2, 3})));
        assertEquals(ErrorCode.INVALID_ARGUMENT, direct.code());
    }

    @Test
    void valuesOfTheWrongTypeOrRangeAreRefusedNamingWhere()
    {
        assertProblem(digests -> groups(digests).getFirst().set(1, "12345678"),
                "kvbridge.digests.crc32c group 0 position 1 is the string \"12345678\" (expected: an integer in [0, 4294967295])");
        assertProblem(digests -> groups(digests).getFirst().set(2, 4_294_967_296L),
                "group 0 position 2 is the integer 4294967296 (expected: an integer in [0, 4294967295])");
        assertProblem(digests -> groups(digests).getFirst().set(0, -1L),
                "group 0 position 0 is the integer -1 (expected: an integer in [0, 4294967295])");
        assertProblem(digests -> rawGroups(digests).set(1, Map.of("a", 1L)),
                "kvbridge.digests.crc32c group 1 is an object (expected: an array of CRC32C values)");
        assertProblem(digests -> digests.put("shape", "5C3E9A01"), "kvbridge.digests.shape is \"5C3E9A01\" (expected: 8 lower-case hex digits");
        assertProblem(digests -> digests.remove("crc32c"), "kvbridge.digests.crc32c is missing");
        assertProblem(digests -> digests.put("sha256", "x"), "unknown key kvbridge.digests.sha256");
        Map<String, Object> map = TransferParamsJson.toMap(DIGESTED);
        kvbridge(map).put("digests", List.of(1L));
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map));
        assertTrue(e.getMessage().contains("kvbridge.digests must be an object, not an array"), e.getMessage());
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> kvbridge(Map<String, Object> map)
    {
        return (Map<String, Object>) map.get("kvbridge");
    }

    @SuppressWarnings("unchecked")
    private static List<Object> rawGroups(Map<String, Object> digests)
    {
        return (List<Object>) digests.get("crc32c");
    }

    @SuppressWarnings("unchecked")
    private static List<List<Object>> groups(Map<String, Object> digests)
    {
        return (List<List<Object>>) digests.get("crc32c");
    }

    @SuppressWarnings("unchecked")
    private static void assertProblem(java.util.function.Consumer<Map<String, Object>> change, String expected)
    {
        Map<String, Object> map = TransferParamsJson.toMap(DIGESTED);
        Map<String, Object> digests = new java.util.LinkedHashMap<>((Map<String, Object>) kvbridge(map).get("digests"));
        List<List<Object>> groups = new ArrayList<>();
        for (List<Object> group : groups(digests)) {
            groups.add(new ArrayList<>(group));
        }
        digests.put("crc32c", groups);
        change.accept(digests);
        kvbridge(map).put("digests", digests);
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map));
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        // the JSON text is read by the same rules
        KvBridgeException fromText = assertThrows(KvBridgeException.class, () -> TransferParamsJson.read(io.kvbridge.json.internal.JsonWriter.write(map,
                false, 0)));
        assertTrue(fromText.getMessage().contains(expected), fromText.getMessage());
    }
}
