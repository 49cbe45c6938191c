package io.kvbridge.json;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.BlockDigests;
import io.kvbridge.api.BlockIds;
import io.kvbridge.api.Integrity;
import io.kvbridge.api.PullKey;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.json.internal.JsonFields;
import io.kvbridge.json.internal.JsonReader;
import io.kvbridge.json.internal.JsonWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * {@link TransferParams} as the JSON object a router carries from the prefill engine to the decode
 * engine, under the names vLLM's {@code kv_transfer_params} uses where the meanings coincide, so that
 * a router built for vLLM's disaggregated serving forwards it unchanged:
 *
 * <pre>{@code
 * {"do_remote_prefill": true, "do_remote_decode": false,
 *  "remote_engine_id": "prefill-0", "remote_request_id": "req-1",
 *  "remote_block_ids": [[1, 2, 3], [7, 8]],
 *  "remote_host": "10.0.0.5", "remote_port": 5600, "tp_size": 2, "pp_size": 1,
 *  "transfer_mode": "push",
 *  "kvbridge": {"version": 3, "side_channels": [{"host": "10.0.0.5", "port": 5600, "epoch": "9f86d081884c7d65",
 *                                               "pull_key": "5e884898da28047151d0e56f8dc62927"}],
 *               "modes": ["push"], "lease_ms": 30000, "finished_ns": 81234567890,
 *               "digests": {"shape": "5c3e9a01", "crc32c": [[3735928559, 305419896, 4023233417], [19088743, 2596069104]]}}}
 * }</pre>
 *
 * <p>{@code remote_host} and {@code remote_port} are pipeline stage 0's side channel;
 * {@code transfer_mode} is written only when the producer serves one mode. What vLLM has no name for
 * is under {@code kvbridge}: every stage's side channel with the epoch of the process serving it
 * and the key it granted the request's blocks under for pulling consumers (each absent when the
 * producer does not know it; a key is {@value PullKey#BYTES} bytes in exactly
 * {@code 2 * PullKey.BYTES} lower-case hex digits, and the document is as secret as the key: whoever
 * holds it may read the request while it is held), the modes, the lease and when the prefill finished (on
 * the producer's clock, for the hand-over metric). An epoch is 16 hex digits in a string, not a
 * number: it is 64 random bits, which a router in JavaScript would round as a JSON number.
 *
 * <p>{@code digests} is present only when the producer computes block digests
 * ({@link Integrity#CRC32C}): its shape fingerprint as 8 lower-case hex digits and one CRC32C per
 * block id, as an integer in {@code [0, 4294967295]}, in the layout of {@code remote_block_ids}
 * (a flat list for a single group is read too). A count that differs from the block ids' is refused.
 * Parameters without it are read as before, and a reader that predates it refuses the unknown key,
 * so a producer turns digests on once its decoders read them.
 *
 * <p>Version 2 documents, written before pull keys, are read without keys: a consumer can push with
 * them, and pulling fails naming the request. Version 1 documents, written before engines had epochs, are refused rather than read without
 * epochs: their producers' handshakes are refused by this release anyway (wire version 3), and
 * reading them would give up the one check that keeps a decoder from reading a restarted producer's
 * memory. Reading ignores other top-level keys
 * (routers and vLLM add their own, such as {@code remote_num_tokens}), refuses unknown keys under
 * {@code kvbridge} with the nearest valid name, and reports every problem at once.
 *
 * <p>The codec is {@code kvbridge-json}'s one entry point: both ends of the hand-over use it, and a
 * router written in Java needs nothing else but it, {@code kvbridge-api} and {@code jackson-core},
 * whose streaming parser the reader drives, strict and bounded, since the text comes from outside
 * the process; no Jackson type is part of this class's signature. Bounds: a
 * document of at most {@value #MAX_CHARS} characters, {@value #MAX_GROUPS} cache groups,
 * {@value #MAX_BLOCK_IDS} block ids in all, {@value #MAX_STAGES} pipeline stages. Thread-safe.
 */
public final class TransferParamsJson
{
    /** The version of the {@code kvbridge} object this codec writes and the highest it reads. */
    public static final int VERSION = 3;
    /** The longest document read. */
    public static final int MAX_CHARS = 16 << 20;
    /** The most cache groups read. */
    public static final int MAX_GROUPS = 64;
    /** The most block ids read, over all groups. */
    public static final int MAX_BLOCK_IDS = 1 << 20;
    /** The most pipeline stages read. */
    public static final int MAX_STAGES = 256;
    /** The lease assumed for parameters without kvbridge's object (vLLM's): what kvbridge's producers hold by default. */
    public static final long VLLM_LEASE_MILLIS = 30_000;

    private static final int MAX_ID_LENGTH = 1024;
    private static final int MAX_HOST_LENGTH = 255;
    /** The most values (keys and array elements) a document holds; a map is read no further. */
    private static final int MAX_VALUES = 2 * MAX_BLOCK_IDS + 4 * MAX_STAGES + 256;
    private static final long MAX_CRC = 0xffff_ffffL;
    private static final JsonReader READER = JsonReader.of(ErrorCode.PROTOCOL_ERROR, MAX_CHARS, 8, MAX_VALUES);
    private static final HexFormat HEX = HexFormat.of();
    private static final Set<String> KVBRIDGE_KEYS = Set.of("version", "side_channels", "modes", "lease_ms", "finished_ns", "digests");

    private TransferParamsJson()
    {
    }

    /**
     * Writes the parameters as one line of JSON.
     *
     * @param params the parameters.
     * @return the JSON object.
     */
    public static String write(TransferParams params)
    {
        return JsonWriter.write(toMap(params), false, 0);
    }

    /**
     * Returns the parameters as the map {@link #write} writes, for a router that puts them into a
     * document of its own.
     *
     * @param params the parameters.
     * @return a new map of strings, integers, booleans, lists and maps.
     */
    public static Map<String, Object> toMap(TransferParams params)
    {
        requireNonNull(params, "params is null");
        List<List<Integer>> blocks = new ArrayList<>();
        for (int g = 0; g < params.blockIds().groupCount(); g++) {
            List<Integer> group = new ArrayList<>(params.blockIds().size(g));
            for (int i = 0; i < params.blockIds().size(g); i++) {
                group.add(params.blockIds().get(g, i));
            }
            blocks.add(group);
        }
        List<Map<String, Object>> stages = new ArrayList<>();
        for (int i = 0; i < params.ppSize(); i++) {
            SideChannelAddress address = params.sideChannels().get(i);
            Map<String, Object> stage = new LinkedHashMap<>();
            stage.put("host", address.host());
            stage.put("port", address.port());
            if (params.epoch(i) != TransferParams.UNKNOWN_EPOCH) {
                stage.put("epoch", TransferParams.formatEpoch(params.epoch(i)));
            }
            if (!params.pullKey(i).isNone()) {
                stage.put("pull_key", HEX.formatHex(params.pullKey(i).bytes()));
            }
            stages.add(stage);
        }
        List<String> modes = EnumSet.copyOf(params.modes()).stream().map(TransferParamsJson::modeName).toList();
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("do_remote_prefill", true);
        map.put("do_remote_decode", false);
        map.put("remote_engine_id", params.engineId());
        map.put("remote_request_id", params.requestId());
        map.put("remote_block_ids", blocks);
        map.put("remote_host", params.sideChannels().getFirst().host());
        map.put("remote_port", params.sideChannels().getFirst().port());
        map.put("tp_size", params.tpSize());
        map.put("pp_size", params.ppSize());
        if (modes.size() == 1) {
            map.put("transfer_mode", modes.getFirst());
        }
        Map<String, Object> own = new LinkedHashMap<>();
        own.put("version", VERSION);
        own.put("side_channels", stages);
        own.put("modes", modes);
        own.put("lease_ms", params.leaseMillis());
        if (params.finishedNanos() != TransferParams.UNKNOWN_TIME) {
            own.put("finished_ns", params.finishedNanos());
        }
        if (!params.digests().isNone()) {
            own.put("digests", digests(params.digests()));
        }
        map.put("kvbridge", own);
        return map;
    }

    /**
     * Reads parameters from JSON.
     *
     * @param json the object {@link #write} wrote, possibly with other keys a router added, or the
     *     {@code kv_transfer_params} vLLM's NixlConnector writes (read for push, see {@link #VLLM_LEASE_MILLIS}).
     * @return the parameters.
     * @throws KvBridgeException {@code PROTOCOL_ERROR} naming every problem.
     */
    public static TransferParams read(String json)
    {
        requireNonNull(json, "json is null");
        Object document = READER.read("kv_transfer_params", json);
        if (!(document instanceof Map<?, ?> map)) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "kv_transfer_params must be a JSON object, not " + JsonFields.describe(document));
        }
        @SuppressWarnings("unchecked")
        Map<String, ?> typed = (Map<String, ?>) map;
        return from(typed, new ArrayList<>());
    }

    /**
     * Reads parameters from a map, as a router's own JSON library parsed them. Integers may be any
     * {@link Number} without a fraction. The map is untrusted input: a null map, keys that are not
     * strings, collections larger than a document may be and collections whose methods throw are
     * problems like any other, and at most as many values are read as {@link #read} would.
     *
     * @param map the object.
     * @return the parameters.
     * @throws KvBridgeException {@code PROTOCOL_ERROR} naming every problem.
     */
    public static TransferParams fromMap(Map<String, ?> map)
    {
        List<String> problems = new ArrayList<>();
        Map<String, Object> copy = ForeignValues.copy(map, problems, MAX_VALUES);
        if (copy == null) {
            throw invalid(problems);
        }
        return from(copy, problems);
    }

    private static TransferParams from(Map<String, ?> map, List<String> problems)
    {
        JsonFields fields = new JsonFields("", map, problems);
        fields.bool("do_remote_prefill").filter(value -> !value)
                .ifPresent(value -> fields.problem("do_remote_prefill", "is false: these parameters ask for no transfer (do not hand them to the decoder)"));
        fields.bool("do_remote_decode").filter(value -> value)
                .ifPresent(value -> fields.problem("do_remote_decode", "is true: kvbridge does not read blocks back from the decoder"));
        String engineId = required(fields, "remote_engine_id", fields.string("remote_engine_id", MAX_ID_LENGTH).orElse(null));
        String requestId = fields.string("remote_request_id", MAX_ID_LENGTH).orElse("");
        checkId(fields, "remote_engine_id", engineId, true);
        checkId(fields, "remote_request_id", requestId, false);
        BlockIds blocks = blocks(fields);
        long tpSize = fields.integer("tp_size", 1, 65_536).orElse(0);
        required(fields, "tp_size", tpSize == 0 ? null : tpSize);
        long ppSize = fields.integer("pp_size", 1, MAX_STAGES).orElse(1);
        String host = required(fields, "remote_host", fields.string("remote_host", MAX_HOST_LENGTH).orElse(null));
        long port = fields.integer("remote_port", 1, 65_535).orElse(0);
        required(fields, "remote_port", port == 0 ? null : port);
        TransferMode transferMode = fields.string("transfer_mode", 8).map(mode -> mode(fields, "transfer_mode", mode)).orElse(null);

        JsonFields own = fields.object("kvbridge").orElse(null);
        if (own == null) {
            return fromVllm(fields, problems, engineId, requestId, blocks, (int) tpSize, (int) ppSize, host, (int) port, transferMode);
        }
        own.refuseUnknown(KVBRIDGE_KEYS);
        long version = own.integer("version", 1, Integer.MAX_VALUE).orElse(0);
        if (version > VERSION) {
            own.problem("version", "=" + version + " is newer than this kvbridge reads (" + VERSION + "); upgrade the decoder's kvbridge");
        }
        else if (version == 1) {
            own.problem("version", "=1 was written by a kvbridge that predates engine epochs, whose producers this decoder cannot tell from"
                    + " their restarted successors (and whose handshakes it refuses); upgrade the producer's kvbridge");
        }
        required(own, "version", version == 0 ? null : version);
        List<Long> epochs = new ArrayList<>();
        List<PullKey> pullKeys = new ArrayList<>();
        List<SideChannelAddress> stages = stages(own, host, port, ppSize, epochs, pullKeys);
        Set<TransferMode> modes = EnumSet.noneOf(TransferMode.class);
        own.array("modes", 2).ifPresentOrElse(list -> {
            for (Object mode : list) {
                TransferMode parsed = mode instanceof String name ? mode(own, "modes", name) : null;
                if (parsed != null) {
                    modes.add(parsed);
                }
                else if (!(mode instanceof String)) {
                    own.problem("modes", "holds " + JsonFields.describe(mode) + " (expected: \"push\" or \"pull\")");
                }
            }
            if (list.isEmpty()) {
                own.problem("modes", "is empty (expected: \"push\", \"pull\" or both)");
            }
        }, () -> own.problem("modes", "is missing"));
        long lease = own.integer("lease_ms", 1, Long.MAX_VALUE / 1_000_000).orElse(0);
        required(own, "lease_ms", lease == 0 ? null : lease);
        long finished = own.integer("finished_ns", Long.MIN_VALUE + 1, Long.MAX_VALUE).orElse(TransferParams.UNKNOWN_TIME);
        BlockDigests digests = own.object("digests").map(nested -> digests(nested, blocks)).orElse(BlockDigests.NONE);
        if (!problems.isEmpty()) {
            throw invalid(problems);
        }
        try {
            return new TransferParams(engineId, requestId, stages, (int) tpSize, (int) ppSize, blocks, modes, lease, finished, epochs, pullKeys,
                    digests);
        }
        catch (KvBridgeException e) {
            String reason = e.getMessage().substring(e.code().id().length() + 2);
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "kv_transfer_params are inconsistent: " + reason, e);
        }
    }

    /**
     * Parameters as vLLM's NixlConnector writes them, without kvbridge's own object: its one side
     * channel is {@code remote_host}/{@code remote_port}, no epoch is checked, the lease is the
     * producers' default, and the mode is push, since a pull needs the key only a kvbridge
     * producer writes.
     */
    private static TransferParams fromVllm(JsonFields fields, List<String> problems, String engineId, String requestId, BlockIds blocks, int tpSize,
            int ppSize, String host, int port, TransferMode transferMode)
    {
        if (ppSize > 1) {
            fields.problem("pp_size", "=" + ppSize + " needs every stage's side channel, in kvbridge.side_channels, which this document lacks"
                    + " (write it with TransferParamsJson.write, or give pp_size 1)");
        }
        if (transferMode == TransferMode.PULL) {
            fields.problem("transfer_mode", "=pull needs kvbridge.side_channels[].pull_key, which only a kvbridge producer writes"
                    + " (TransferParamsJson.write); without kvbridge the decoder can only be pushed to (transfer_mode push)");
        }
        if (!problems.isEmpty()) {
            throw invalid(problems);
        }
        try {
            return new TransferParams(engineId, requestId, List.of(new SideChannelAddress(host, port)), tpSize, 1, blocks, EnumSet.of(TransferMode.PUSH),
                    VLLM_LEASE_MILLIS, TransferParams.UNKNOWN_TIME, List.of(TransferParams.UNKNOWN_EPOCH), List.of(PullKey.NONE));
        }
        catch (KvBridgeException e) {
            String reason = e.getMessage().substring(e.code().id().length() + 2);
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "kv_transfer_params are inconsistent: " + reason, e);
        }
    }

    private static BlockIds blocks(JsonFields fields)
    {
        List<?> groups = fields.array("remote_block_ids", MAX_BLOCK_IDS).orElse(null);
        if (groups == null) {
            if (!fields.has("remote_block_ids")) {
                fields.problem("remote_block_ids", "is missing");
            }
            return BlockIds.empty();
        }
        // vLLM accepts a flat list as the one group of a model with a single cache group
        boolean flat = !groups.isEmpty() && !(groups.getFirst() instanceof List<?>);
        List<?> lists = flat ? List.of(groups) : groups;
        if (lists.size() > MAX_GROUPS) {
            fields.problem("remote_block_ids", "has " + lists.size() + " cache groups, more than " + MAX_GROUPS);
            return BlockIds.empty();
        }
        long total = 0;
        for (Object group : lists) {
            total += group instanceof List<?> list ? list.size() : 0;
        }
        if (total > MAX_BLOCK_IDS) {
            fields.problem("remote_block_ids", "holds " + total + " block ids, more than " + MAX_BLOCK_IDS);
            return BlockIds.empty();
        }
        int[][] ids = new int[lists.size()][];
        for (int g = 0; g < ids.length; g++) {
            if (!(lists.get(g) instanceof List<?> group)) {
                fields.problem("remote_block_ids", "group " + g + " is " + JsonFields.describe(lists.get(g)) + " (expected: an array of block ids)");
                return BlockIds.empty();
            }
            ids[g] = new int[group.size()];
            for (int i = 0; i < ids[g].length; i++) {
                if (!(group.get(i) instanceof Long id) || id < 0 || id > Integer.MAX_VALUE) {
                    fields.problem("remote_block_ids", String.format(Locale.ROOT, "group %d position %d is %s (expected: an integer in [0, %d])", g, i,
                            JsonFields.describe(group.get(i)), Integer.MAX_VALUE));
                    return BlockIds.empty();
                }
                ids[g][i] = (int) (long) id;
            }
        }
        return BlockIds.of(ids);
    }

    private static Map<String, Object> digests(BlockDigests digests)
    {
        List<List<Long>> groups = new ArrayList<>();
        for (int g = 0; g < digests.groupCount(); g++) {
            List<Long> group = new ArrayList<>(digests.size(g));
            for (int i = 0; i < digests.size(g); i++) {
                group.add(Integer.toUnsignedLong(digests.get(g, i)));
            }
            groups.add(group);
        }
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("shape", String.format(Locale.ROOT, "%08x", digests.shape()));
        map.put("crc32c", groups);
        return map;
    }

    private static BlockDigests digests(JsonFields fields, BlockIds blocks)
    {
        fields.refuseUnknown(Set.of("shape", "crc32c"));
        String shapeText = fields.string("shape", 16).orElse(null);
        int shape = 0;
        if (shapeText == null) {
            required(fields, "shape", null);
        }
        else if (shapeText.length() == 8 && shapeText.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            shape = Integer.parseUnsignedInt(shapeText, 16);
        }
        else {
            fields.problem("shape", "is \"" + shapeText + "\" (expected: 8 lower-case hex digits, as the producer wrote it)");
        }
        List<?> groups = fields.array("crc32c", MAX_BLOCK_IDS).orElse(null);
        if (groups == null) {
            required(fields, "crc32c", null);
            return BlockDigests.NONE;
        }
        boolean flat = !groups.isEmpty() && !(groups.getFirst() instanceof List<?>);
        List<?> lists = flat ? List.of(groups) : groups;
        if (lists.size() != blocks.groupCount()) {
            fields.problem("crc32c", "has " + lists.size() + " cache groups but remote_block_ids has " + blocks.groupCount()
                    + " (expected: one digest per block id)");
            return BlockDigests.NONE;
        }
        int[][] crcs = new int[lists.size()][];
        for (int g = 0; g < crcs.length; g++) {
            if (!(lists.get(g) instanceof List<?> group)) {
                fields.problem("crc32c", "group " + g + " is " + JsonFields.describe(lists.get(g)) + " (expected: an array of CRC32C values)");
                return BlockDigests.NONE;
            }
            if (group.size() != blocks.size(g)) {
                fields.problem("crc32c", "group " + g + " has " + group.size() + " digests but " + blocks.size(g)
                        + " block ids (expected: one digest per block id)");
                return BlockDigests.NONE;
            }
            crcs[g] = new int[group.size()];
            for (int i = 0; i < crcs[g].length; i++) {
                if (!(group.get(i) instanceof Long crc) || crc < 0 || crc > MAX_CRC) {
                    fields.problem("crc32c", String.format(Locale.ROOT, "group %d position %d is %s (expected: an integer in [0, %d])", g, i,
                            JsonFields.describe(group.get(i)), MAX_CRC));
                    return BlockDigests.NONE;
                }
                crcs[g][i] = (int) (long) crc;
            }
        }
        return crcs.length == 0 ? BlockDigests.NONE : BlockDigests.of(shape, crcs);
    }

    private static List<SideChannelAddress> stages(JsonFields own, String host, long port, long ppSize, List<Long> epochs, List<PullKey> pullKeys)
    {
        List<?> list = own.array("side_channels", MAX_STAGES).orElse(null);
        if (list == null) {
            if (!own.has("side_channels")) {
                own.problem("side_channels", "is missing");
            }
            return List.of();
        }
        List<SideChannelAddress> stages = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            if (!(list.get(i) instanceof Map<?, ?> entry)) {
                own.problem("side_channels", "stage " + i + " is " + JsonFields.describe(list.get(i)) + " (expected: {\"host\": ..., \"port\": ...})");
                continue;
            }
            @SuppressWarnings("unchecked")
            JsonFields stage = own.nested(own.pathOf("side_channels") + "[" + i + "]", (Map<String, ?>) entry);
            stage.refuseUnknown(Set.of("host", "port", "epoch", "pull_key"));
            String stageHost = stage.string("host", MAX_HOST_LENGTH).orElse(null);
            long stagePort = stage.integer("port", 1, 65_535).orElse(0);
            if (stageHost == null || stageHost.isEmpty() || stagePort == 0) {
                own.problem("side_channels", "stage " + i + " needs a non-empty host and a port in [1, 65535]");
                continue;
            }
            stages.add(new SideChannelAddress(stageHost, (int) stagePort));
            epochs.add(stage.string("epoch", 64).map(text -> epoch(stage, text)).orElse(TransferParams.UNKNOWN_EPOCH));
            pullKeys.add(stage.string("pull_key", 4 * PullKey.BYTES).map(text -> pullKey(stage, text)).orElse(PullKey.NONE));
        }
        if (stages.size() != list.size()) {
            return List.of();
        }
        if (stages.size() != ppSize) {
            own.problem("side_channels", "has " + stages.size() + " stages but pp_size=" + ppSize + " (expected: one per pipeline stage)");
        }
        else if (host != null && port != 0 && !stages.getFirst().equals(new SideChannelAddress(host, (int) port))) {
            own.problem("side_channels", "stage 0 is " + stages.getFirst() + " but remote_host and remote_port say " + host + ":" + port
                    + " (a router rewrote one of them: rewrite both)");
        }
        return stages;
    }

    private static long epoch(JsonFields stage, String text)
    {
        // exactly the 16 digits write() produces: a shorter or signed form is a router that rewrote it
        if (text.length() == 16 && text.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            long epoch = Long.parseUnsignedLong(text, 16);
            if (epoch != TransferParams.UNKNOWN_EPOCH) {
                return epoch;
            }
        }
        stage.problem("epoch", "is \"" + text + "\" (expected: 16 lower-case hex digits, not all zero, as the producer wrote it;"
                + " omit it when not known)");
        return TransferParams.UNKNOWN_EPOCH;
    }

    private static PullKey pullKey(JsonFields stage, String text)
    {
        // exactly the digits write() produces, so that a key has one text form
        if (text.length() == 2 * PullKey.BYTES && text.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return PullKey.of(HEX.parseHex(text));
        }
        // the text is not echoed: a router that mangled a key still must not log it
        stage.problem("pull_key", "is " + text.length() + " characters (expected: " + 2 * PullKey.BYTES + " lower-case hex digits, as the"
                + " producer wrote it; omit it when not known)");
        return PullKey.NONE;
    }

    private static TransferMode mode(JsonFields fields, String key, String name)
    {
        return switch (name) {
            case "push" -> TransferMode.PUSH;
            case "pull" -> TransferMode.PULL;
            default -> {
                fields.problem(key, "holds \"" + name + "\" (expected: \"push\" or \"pull\")");
                yield null;
            }
        };
    }

    private static String modeName(TransferMode mode)
    {
        return mode.name().toLowerCase(Locale.ROOT);
    }

    private static void checkId(JsonFields fields, String key, String id, boolean engine)
    {
        String problem = id == null ? null : TransferParams.idProblem(id, engine);
        if (problem != null) {
            fields.problem(key, problem);
        }
    }

    private static <T> T required(JsonFields fields, String key, T value)
    {
        if (value == null && !fields.has(key)) {
            fields.problem(key, "is missing");
        }
        return value;
    }

    private static KvBridgeException invalid(List<String> problems)
    {
        return new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "kv_transfer_params are invalid (" + problems.size() + " problem"
                + (problems.size() == 1 ? "" : "s") + "): " + String.join("; ", problems));
    }
}
