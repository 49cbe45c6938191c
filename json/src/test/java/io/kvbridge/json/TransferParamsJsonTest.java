package io.kvbridge.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.PullKey;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.json.internal.JsonWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.math.BigInteger;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

final class TransferParamsJsonTest
{
    private static final TransferParams TWO_STAGES = new TransferParams("prefill-0", "req-1",
            List.of(new SideChannelAddress("10.0.0.5", 5600), new SideChannelAddress("10.0.0.6", 5601)), 2, 2,
            BlockIds.of(new int[] {1, 2, 3}, new int[] {7, Integer.MAX_VALUE}), EnumSet.of(TransferMode.PUSH), 30_000, -81_234_567_890L,
            List.of(0x9f86d081884c7d65L, TransferParams.UNKNOWN_EPOCH), List.of(PullKey.of(key(0x5e)), PullKey.NONE));

    @Test
    void writesVllmNamesAndReadsThemBack()
    {
        String json = TransferParamsJson.write(TWO_STAGES);
        assertEquals("{\"do_remote_prefill\": true, \"do_remote_decode\": false, \"remote_engine_id\": \"prefill-0\", \"remote_request_id\": \"req-1\","
                + " \"remote_block_ids\": [[1, 2, 3], [7, 2147483647]], \"remote_host\": \"10.0.0.5\", \"remote_port\": 5600, \"tp_size\": 2,"
                + " \"pp_size\": 2, \"transfer_mode\": \"push\", \"kvbridge\": {\"version\": 3, \"side_channels\": [{\"host\": \"10.0.0.5\", \"port\": 5600,"
                + " \"epoch\": \"9f86d081884c7d65\", \"pull_key\": \"5e5f606162636465666768696a6b6c6d\"}, {\"host\": \"10.0.0.6\", \"port\": 5601}], \"modes\": [\"push\"], \"lease_ms\": 30000, \"finished_ns\": -81234567890}}", json);
        assertEquals(TWO_STAGES, TransferParamsJson.read(json));
    }

    private static byte[] key(int first)
    {
        byte[] key = new byte[PullKey.BYTES];
        for (int i = 0; i < key.length; i++) {
            key[i] = (byte) (first + i);
        }
        return key;
    }

    @Test
    void aPullKeyOfAnotherLengthOrFormIsRefusedWithoutEchoingIt()
    {
        for (String bad : List.of("5e5f606162636465666768696a6b6c", "5e5f606162636465666768696a6b6c6d6e", "5E5F606162636465666768696A6B6C6D",
                "zz5f606162636465666768696a6b6c6d")) {
            Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
            @SuppressWarnings("unchecked")
            Map<String, Object> stage = ((List<Map<String, Object>>) ((Map<String, Object>) map.get("kvbridge")).get("side_channels")).getFirst();
            stage.put("pull_key", bad);
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map));
            assertEquals(ErrorCode.PROTOCOL_ERROR, e.code());
            assertTrue(e.getMessage().contains("kvbridge.side_channels[0].pull_key is " + bad.length() + " characters (expected: 32 lower-case hex"
                    + " digits"), e.getMessage());
            assertTrue(!e.getMessage().contains(bad), e.getMessage());
        }
    }

    @Test
    void versionTwoParametersAreReadWithoutPullKeys()
    {
        Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
        @SuppressWarnings("unchecked")
        Map<String, Object> own = (Map<String, Object>) map.get("kvbridge");
        own.put("version", 2);
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> stages = (List<Map<String, Object>>) own.get("side_channels");
        stages.getFirst().remove("pull_key");
        TransferParams read = TransferParamsJson.fromMap(map);
        assertEquals(List.of(PullKey.NONE, PullKey.NONE), read.pullKeys());
        assertEquals(TWO_STAGES.epochs(), read.epochs());
    }

    @Test
    void textFormsNeverShowAPullKey()
    {
        String text = TWO_STAGES.toString();
        assertTrue(text.contains("pullKeys=[PullKey[redacted], PullKey[none]]") && !text.contains("5e5f6061"), text);
        assertEquals("PullKey[redacted]", PullKey.of(key(1)).toString());
        assertThrows(KvBridgeException.class, () -> PullKey.of(new byte[PullKey.BYTES - 1]));
    }

    @Test
    void mergingStagesMergesTheirPullKeysAndRefusesTwoKeysForOneStage()
    {
        List<SideChannelAddress> stages = List.of(new SideChannelAddress("h", 1), new SideChannelAddress("h", 2));
        TransferParams first = new TransferParams("p", "r", stages, 1, 2, BlockIds.of(new int[] {4}), Set.of(TransferMode.PULL), 5,
                TransferParams.UNKNOWN_TIME, List.of(1L, 0L), List.of(PullKey.of(key(1)), PullKey.NONE));
        TransferParams second = new TransferParams("p", "r", stages, 1, 2, BlockIds.of(new int[] {4}), Set.of(TransferMode.PULL), 5,
                TransferParams.UNKNOWN_TIME, List.of(0L, 2L), List.of(PullKey.NONE, PullKey.of(key(2))));
        assertEquals(List.of(PullKey.of(key(1)), PullKey.of(key(2))), first.withEpochsOf(second).pullKeys());
        TransferParams restarted = new TransferParams("p", "r", stages, 1, 2, BlockIds.of(new int[] {4}), Set.of(TransferMode.PULL), 5,
                TransferParams.UNKNOWN_TIME, List.of(1L, 0L), List.of(PullKey.of(key(3)), PullKey.NONE));
        assertThrows(KvBridgeException.class, () -> first.withEpochsOf(restarted));
    }

    @Test
    void roundTripsEarlyPushParametersBothModesAndAnUnknownFinishTime()
    {
        TransferParams early = new TransferParams("p", "", List.of(new SideChannelAddress("::1", 1)), 1, 1, BlockIds.empty(),
                EnumSet.allOf(TransferMode.class), 1);
        String json = TransferParamsJson.write(early);
        assertTrue(!json.contains("transfer_mode") && !json.contains("finished_ns"), json);
        assertEquals(early, TransferParamsJson.read(json));
        TransferParams emptyGroups = new TransferParams("p", "r", List.of(new SideChannelAddress("h", 2)), 1, 1, BlockIds.of(new int[0], new int[0]),
                Set.of(TransferMode.PULL), 5);
        assertEquals(emptyGroups, TransferParamsJson.read(TransferParamsJson.write(emptyGroups)));
    }

    @Test
    void aNullMapIsAProtocolError()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(null));
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains("kv_transfer_params is null"), e::getMessage);
    }

    @Test
    @SuppressWarnings("unchecked")
    void aKeyThatIsNotAStringIsAProtocolErrorNamingWhereItIs()
    {
        Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
        ((Map<Object, Object>) (Map<?, ?>) map).put(7, "seven");
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map));
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains("kv_transfer_params has key 7 (Integer) (expected: string keys)"), e::getMessage);
        Map<String, Object> nested = TransferParamsJson.toMap(TWO_STAGES);
        ((Map<Object, Object>) nested.get("kvbridge")).put(List.of(), 1);
        e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(nested));
        assertTrue(e.getMessage().contains("kvbridge has key an array"), e::getMessage);
    }

    @Test
    void aListViewReportingAHugeSizeIsAProtocolErrorNamingItsField()
    {
        Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
        map.put("remote_block_ids", new java.util.AbstractList<Object>()
        {
            @Override
            public Object get(int index)
            {
                return 1;
            }

            @Override
            public int size()
            {
                return Integer.MAX_VALUE;
            }
        });
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map));
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains("remote_block_ids reports 2147483647 entries, more than"), e::getMessage);
    }

    @Test
    void aThrowingListIsAProtocolErrorNamingItsField()
    {
        Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
        map.put("remote_block_ids", new java.util.AbstractList<Object>()
        {
            @Override
            public Object get(int index)
            {
                throw new IllegalStateException("the router's buffer was released");
            }

            @Override
            public int size()
            {
                return 2;
            }
        });
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map));
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains("remote_block_ids could not be read: java.lang.IllegalStateException thrown by the caller's collection"),
                e::getMessage);
    }

    @Test
    void engineIdsWithControlCharactersOrSlashesAndRequestIdsWithControlCharactersAreRefusedNamingTheCodePoint()
    {
        List<SideChannelAddress> one = List.of(new SideChannelAddress("h", 2));
        BlockIds blocks = BlockIds.of(new int[] {4});
        Set<TransferMode> push = Set.of(TransferMode.PUSH);
        String[][] cases = {{"pre\u0000fill", "U+0000 at index 3"}, {"prefill\n", "U+000A at index 7"}, {"../other", "U+002F at index 2"},
                {"a\u202eb", "U+202E at index 1"}, {"a\u2028b", "U+2028 at index 1"}, {"x\u007f", "U+007F at index 1"}};
        for (String[] bad : cases) {
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> new TransferParams(bad[0], "r", one, 1, 1, blocks, push, 5));
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e::getMessage);
            assertTrue(e.getMessage().contains("engineId holds " + bad[1]), e::getMessage);
            // the message never carries the id itself
            assertTrue(!e.getMessage().contains(bad[0]), e::getMessage);
            Map<String, Object> map = TransferParamsJson.toMap(new TransferParams("p", "r", one, 1, 1, blocks, push, 5));
            map.put("remote_engine_id", bad[0]);
            KvBridgeException read = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map));
            assertEquals(ErrorCode.PROTOCOL_ERROR, read.code(), read::getMessage);
            assertTrue(read.getMessage().contains("remote_engine_id holds " + bad[1]), read::getMessage);
        }
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> new TransferParams("p", "req\r\n1", one, 1, 1, blocks, push, 5));
        assertTrue(e.getMessage().contains("requestId holds U+000D at index 3"), e::getMessage);
        String json = TransferParamsJson.write(new TransferParams("p", "req-1", one, 1, 1, blocks, push, 5)).replace("\"req-1\"", "\"req\\u001b[2J\"");
        KvBridgeException read = assertThrows(KvBridgeException.class, () -> TransferParamsJson.read(json));
        assertTrue(read.getMessage().contains("remote_request_id holds U+001B at index 3"), read::getMessage);
        // a request id may hold '/', and both may hold any other character
        assertEquals("a/b", new TransferParams("prefill-é", "a/b", one, 1, 1, blocks, push, 5).requestId());
    }

    @Test
    void aRoutersOwnKeysAreIgnoredAndItsJsonLibrarysNumbersAccepted()
    {
        Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
        map.put("remote_num_tokens", 48);
        map.put("_remote_blocks_processed", true);
        // what Jackson or Gson hand over: Integers, BigIntegers, whole Doubles
        map.put("tp_size", 2.0);
        map.put("remote_port", BigInteger.valueOf(5600));
        assertEquals(TWO_STAGES, TransferParamsJson.fromMap(map));
        // vLLM accepts a flat list for a model with one cache group
        Map<String, Object> flat = TransferParamsJson.toMap(new TransferParams("p", "r", List.of(new SideChannelAddress("h", 2)), 1, 1,
                BlockIds.of(new int[] {4, 5}), Set.of(TransferMode.PULL), 5));
        flat.put("remote_block_ids", List.of(4, 5));
        assertEquals(BlockIds.of(new int[] {4, 5}), TransferParamsJson.fromMap(flat).blockIds());
    }

    @Test
    void everyProblemIsReportedAtOnce()
    {
        Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
        map.remove("remote_engine_id");
        map.put("tp_size", "2");
        map.put("remote_block_ids", List.of(List.of(1, -1)));
        map.put("do_remote_decode", true);
        @SuppressWarnings("unchecked")
        Map<String, Object> own = (Map<String, Object>) map.get("kvbridge");
        own.put("lease_msec", 5);
        own.put("modes", List.of("push", "both"));
        own.put("version", 4);
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map));
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code());
        for (String problem : List.of("(7 problems)", "do_remote_decode is true: kvbridge does not read blocks back from the decoder",
                "remote_engine_id is missing", "tp_size must be an integer, not the string \"2\"",
                "remote_block_ids group 0 position 1 is the integer -1 (expected: an integer in [0, 2147483647])",
                "unknown key kvbridge.lease_msec (did you mean lease_ms?)", "kvbridge.version=4 is newer than this kvbridge reads (3)",
                "kvbridge.modes holds \"both\" (expected: \"push\" or \"pull\")")) {
            assertTrue(e.getMessage().contains(problem), problem + " in " + e.getMessage());
        }
    }

    @Test
    void parametersAsVllmsNixlConnectorWritesThemAreReadForPush()
    {
        // the keys of NixlConnector's request_finished, nothing of kvbridge's own
        TransferParams params = TransferParamsJson.read("""
                {"do_remote_prefill": true, "do_remote_decode": false, "remote_block_ids": [7, 8, 9], "remote_engine_id": "prefill-0",
                 "remote_request_id": "cmpl-1", "remote_host": "10.0.0.5", "remote_port": 5600, "tp_size": 2}""");
        assertEquals("prefill-0", params.engineId());
        assertEquals("cmpl-1", params.requestId());
        assertEquals(List.of(new SideChannelAddress("10.0.0.5", 5600)), params.sideChannels());
        assertEquals(2, params.tpSize());
        assertEquals(1, params.ppSize());
        assertEquals(1, params.blockIds().groupCount());
        assertEquals(List.of(7, 8, 9), List.of(params.blockIds().get(0, 0), params.blockIds().get(0, 1), params.blockIds().get(0, 2)));
        assertEquals(Set.of(TransferMode.PUSH), params.modes());
        assertEquals(TransferParamsJson.VLLM_LEASE_MILLIS, params.leaseMillis());
        assertEquals(TransferParams.UNKNOWN_TIME, params.finishedNanos());
        assertEquals(List.of(TransferParams.UNKNOWN_EPOCH), params.epochs());
        assertEquals(List.of(PullKey.NONE), params.pullKeys());
        // the grouped form of newer versions, with the keys they add, reads the same way
        TransferParams grouped = TransferParamsJson.read("""
                {"do_remote_prefill": true, "do_remote_decode": false, "remote_block_ids": [[7, 8, 9], [1]], "remote_engine_id": "prefill-0",
                 "remote_host": "10.0.0.5", "remote_port": 5600, "tp_size": 1, "remote_num_tokens": 40}""");
        assertEquals(2, grouped.blockIds().groupCount());
        assertEquals("", grouped.requestId());
    }

    @Test
    void parametersWithoutKvbridgesObjectNameWhatTheyLack()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.read("""
                {"do_remote_prefill": true, "remote_block_ids": [1], "remote_engine_id": "prefill-0", "remote_host": "10.0.0.5",
                 "remote_port": 5600, "transfer_mode": "pull"}"""));
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code());
        assertTrue(e.getMessage().contains("tp_size is missing"), e.getMessage());
        assertTrue(e.getMessage().contains("transfer_mode=pull needs kvbridge.side_channels[].pull_key, which only a kvbridge producer writes"),
                e.getMessage());
    }

    @Test
    void inconsistentAddressesAndStagesAreRefused()
    {
        Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
        map.put("remote_host", "10.9.9.9");
        map.put("pp_size", 1);
        String message = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map)).getMessage();
        assertTrue(message.contains("kvbridge.side_channels has 2 stages but pp_size=1 (expected: one per pipeline stage)"), message);
        map.put("pp_size", 2);
        message = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map)).getMessage();
        assertTrue(message.contains("stage 0 is 10.0.0.5:5600 but remote_host and remote_port say 10.9.9.9:5600"), message);
        map.remove("kvbridge");
        message = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map)).getMessage();
        assertTrue(message.contains("pp_size=2 needs every stage's side channel, in kvbridge.side_channels, which this document lacks"), message);
        map.put("do_remote_prefill", false);
        message = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map)).getMessage();
        assertTrue(message.contains("do_remote_prefill is false"), message);
    }

    @Test
    void epochsAreSixteenHexDigitsPerStageAndVersionOneIsRefused()
    {
        // the top bit set: a JSON number would be negative here and rounded by a router in JavaScript
        TransferParams params = new TransferParams("p", "r", List.of(new SideChannelAddress("h", 2)), 1, 1, BlockIds.of(new int[] {4}),
                Set.of(TransferMode.PULL), 5, TransferParams.UNKNOWN_TIME, List.of(0xfedcba9876543210L));
        String json = TransferParamsJson.write(params);
        assertTrue(json.contains("\"epoch\": \"fedcba9876543210\""), json);
        assertEquals(0xfedcba9876543210L, TransferParamsJson.read(json).epoch(0));

        Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
        @SuppressWarnings("unchecked")
        Map<String, Object> own = (Map<String, Object>) map.get("kvbridge");
        @SuppressWarnings("unchecked")
        Map<String, Object> stage = (Map<String, Object>) ((List<?>) own.get("side_channels")).getFirst();
        for (Object bad : List.of("9F86D081884C7D65", "9f86d08", "0000000000000000", "-9f86d081884c7d6", 42)) {
            stage.put("epoch", bad);
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map));
            assertEquals(ErrorCode.PROTOCOL_ERROR, e.code());
            assertTrue(e.getMessage().contains("kvbridge.side_channels[0].epoch "), e.getMessage());
        }
        stage.remove("epoch");
        assertEquals(TransferParams.UNKNOWN_EPOCH, TransferParamsJson.fromMap(map).epoch(0));

        own.put("version", 1);
        String message = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map)).getMessage();
        assertTrue(message.contains("kvbridge.version=1 was written by a kvbridge that predates engine epochs"), message);
    }

    @Test
    void aRouterMergesTheEpochsEveryStageKnows()
    {
        List<SideChannelAddress> stages = List.of(new SideChannelAddress("h", 1), new SideChannelAddress("h", 2));
        TransferParams first = new TransferParams("p", "r", stages, 1, 2, BlockIds.of(new int[] {4}), Set.of(TransferMode.PULL), 5,
                TransferParams.UNKNOWN_TIME, List.of(7L, TransferParams.UNKNOWN_EPOCH));
        TransferParams second = new TransferParams("p", "r", stages, 1, 2, BlockIds.of(new int[] {4}), Set.of(TransferMode.PULL), 5,
                TransferParams.UNKNOWN_TIME, List.of(TransferParams.UNKNOWN_EPOCH, 9L));
        assertEquals(List.of(7L, 9L), first.withEpochsOf(second).epochs());
        assertEquals(List.of(7L, 9L), second.withEpochsOf(first).epochs());
        TransferParams restarted = new TransferParams("p", "r", stages, 1, 2, BlockIds.of(new int[] {4}), Set.of(TransferMode.PULL), 5,
                TransferParams.UNKNOWN_TIME, List.of(8L, 9L));
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> first.withEpochsOf(restarted));
        assertTrue(e.getMessage().contains("stage 0 of engine p is named with epochs 0000000000000007 and 0000000000000008"), e.getMessage());
        e = assertThrows(KvBridgeException.class, () -> first.withEpochsOf(second.withRequestId("other")));
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    }

    @Test
    void stagesSharingASideChannelNameOneEpoch()
    {
        SideChannelAddress shared = new SideChannelAddress("h", 2);
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> new TransferParams("p", "r", List.of(shared, shared), 1, 2,
                BlockIds.of(new int[] {4}), Set.of(TransferMode.PULL), 5, TransferParams.UNKNOWN_TIME, List.of(1L, 2L)));
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains("stages 0 and 1 share side channel h:2 but name epochs 0000000000000001 and 0000000000000002"),
                e.getMessage());
        assertThrows(KvBridgeException.class, () -> new TransferParams("p", "r", List.of(shared), 1, 1, BlockIds.of(new int[] {4}),
                Set.of(TransferMode.PULL), 5, TransferParams.UNKNOWN_TIME, List.of()));
    }

    @Test
    void hostileDocumentsAreRefusedWithinTheBounds()
    {
        assertRefused("[1, 2]", "kv_transfer_params must be a JSON object, not an array");
        assertRefused("{\"remote_engine_id\": \"a\", \"remote_engine_id\": \"b\"}", "duplicate key \"remote_engine_id\"");
        assertRefused(" ".repeat(TransferParamsJson.MAX_CHARS + 1), "more than the 16,777,216 accepted");
        assertRefused("{\"kvbridge\": " + "[".repeat(100) + "]".repeat(100) + "}", "nesting deeper than 8 levels");
        Map<String, Object> map = TransferParamsJson.toMap(TWO_STAGES);
        map.put("remote_block_ids", java.util.Collections.nCopies(TransferParamsJson.MAX_GROUPS + 1, List.of()));
        assertRefused(JsonWriter.write(map, false, 0), "has 65 cache groups, more than 64");
        map.put("remote_block_ids", List.of(java.util.Collections.nCopies(TransferParamsJson.MAX_BLOCK_IDS + 1, 0)));
        assertRefused(JsonWriter.write(map, false, 0), "remote_block_ids holds 1048577 block ids, more than 1048576");
        map.put("remote_block_ids", List.of(List.of(4_294_967_296L)));
        assertRefused(JsonWriter.write(map, false, 0), "group 0 position 0 is the integer 4294967296");
        map.put("remote_block_ids", List.of(List.of(1)));
        map.put("remote_request_id", "r".repeat(1025));
        map.put("remote_port", 70_000);
        assertRefused(JsonWriter.write(map, false, 0), "remote_request_id has 1025 characters, more than 1024");
        assertRefused(JsonWriter.write(map, false, 0), "remote_port=70000 is outside [1, 65535]");
    }

    private static void assertRefused(String json, String problem)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.read(json));
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code());
        assertTrue(e.getMessage().contains(problem), problem + " in " + e.getMessage());
    }
}
