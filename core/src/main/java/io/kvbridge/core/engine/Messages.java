package io.kvbridge.core.engine;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.Objects.requireNonNull;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.RequestIds;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.wire.WireDecoder;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.core.wire.WireMap;
import io.kvbridge.core.wire.WireWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferBackend;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The notifications connectors exchange over the transport, and their parsing. Everything a peer
 * sends is untrusted: {@link #parse} never throws, it returns {@link Malformed} with the reason.
 *
 * <pre>
 *   completion   "&lt;producer request id&gt;:&lt;consumers&gt;:&lt;epoch&gt;"   consumer -> producer (split at the last two ':')
 *   heartbeat    "HB:&lt;epoch&gt;:&lt;id&gt;,&lt;id&gt;,..."                   consumer -> producer
 *   registration "PUSH_REG:" msgpack map                          consumer -> producer
 *   push done    "PUSH_DONE:" msgpack map                         producer -> consumer, attached to a WRITE
 *   push failed  "PUSH_FAILED:" msgpack map                       producer -> consumer, when its writes cannot happen
 *   pull watch   "PULL_WATCH:" msgpack map, as a registration     consumer -> producer, asks for a streamed request's layers
 *   pull layers  "PULL_LAYERS:" msgpack map                       producer -> consumer, layers computed since the last one
 * </pre>
 *
 * <p>Every notification names the epoch of the receiving rank's engine as the sender learned it
 * (16 hex digits in the text forms, {@code epoch} in the maps), so that a rank refuses what was
 * meant for an earlier incarnation of its engine; a registration also names the consumer's own
 * epoch ({@code consumer_epoch}), which the producer checks against the consumer's side channel
 * before it writes.
 */
final class Messages
{
    static final String HEARTBEAT = "HB:";
    static final String REGISTRATION = "PUSH_REG:";
    static final String PUSH_DONE = "PUSH_DONE:";
    static final String PUSH_FAILED = "PUSH_FAILED:";
    static final String LAYERS_LANDED = "PUSH_LAYERS:";
    // within the decoder's string limit (1,024 bytes) even when a few characters take two bytes
    private static final int MAX_REASON_CHARS = 900;
    // a registration is small: a few ids and one block list; refuse anything larger before decoding
    private static final WireLimits LIMITS = new WireLimits(1 << 20, 1 << 16, RequestIds.MAX_LENGTH * 2, 1 << 20, 4);
    private static final int MAX_GROUPS = 64;
    private static final int EPOCH_DIGITS = 16;

    private Messages()
    {
    }

    /** A parsed notification. */
    sealed interface Message permits Completion, Heartbeat, Registration, PushDone, PushFailed, LayersLanded, PullMessages.PullWatch,
            PullMessages.LayersComputed, Malformed
    {
    }

    /**
     * A consumer rank is done with a producer request.
     *
     * @param requestId the producer request id.
     * @param consumers how many consumer ranks address the receiving producer rank for this request.
     * @param epoch the producer's epoch the consumer learned at its handshake.
     */
    record Completion(String requestId, int consumers, long epoch) implements Message
    {
    }

    /**
     * @param epoch the producer's epoch the consumer learned at its handshake.
     * @param requestIds producer request ids a consumer still waits for.
     */
    record Heartbeat(long epoch, List<String> requestIds) implements Message
    {
    }

    /**
     * A consumer rank's push registration.
     *
     * @param requestId the consumer's request id.
     * @param producerRequestId the producer request id when the consumer knows it, else empty.
     * @param engineId the consumer engine.
     * @param host the consumer's side channel host.
     * @param port the consumer's side channel port.
     * @param ppRank the consumer rank's stage.
     * @param tpRank the consumer rank's tensor-parallel rank.
     * @param consumers how many consumer ranks address the receiving producer rank.
     * @param write true when the receiving producer rank writes to this consumer rank; false when it
     *     only has to free its replica.
     * @param blocks the consumer's logical block ids per group.
     * @param epoch the producer's epoch the consumer learned at its handshake.
     * @param consumerEpoch the consumer's own epoch: the producer writes only to a consumer whose side channel still answers with it.
     * @param grantKey the key under which the consumer rank granted those blocks to the ranks that
     *     write; empty when the producer rank only frees its replica.
     */
    record Registration(String requestId, String producerRequestId, String engineId, String host, int port, int ppRank, int tpRank, int consumers,
            boolean write, BlockIds blocks, long epoch, long consumerEpoch, byte[] grantKey) implements Message
    {
        Registration
        {
            requireNonNull(grantKey, "grantKey is null");
            requireNonNull(requestId, "requestId is null");
            requireNonNull(producerRequestId, "producerRequestId is null");
            requireNonNull(engineId, "engineId is null");
            requireNonNull(host, "host is null");
            requireNonNull(blocks, "blocks is null");
        }

        /** Registrations are equal when every component is; the key by its bytes. */
        @Override
        public boolean equals(Object other)
        {
            return other instanceof Registration that && requestId.equals(that.requestId) && producerRequestId.equals(that.producerRequestId)
                    && engineId.equals(that.engineId) && host.equals(that.host) && port == that.port && ppRank == that.ppRank
                    && tpRank == that.tpRank && consumers == that.consumers && write == that.write && blocks.equals(that.blocks)
                    && epoch == that.epoch && consumerEpoch == that.consumerEpoch && Arrays.equals(grantKey, that.grantKey);
        }

        @Override
        public int hashCode()
        {
            return 31 * java.util.Objects.hash(requestId, producerRequestId, engineId, host, port, ppRank, tpRank, consumers, write, blocks, epoch,
                    consumerEpoch)
                    + Arrays.hashCode(grantKey);
        }

        @Override
        public String toString()
        {
            // the key is what lets a peer write the blocks: it is never printed
            return "Registration[requestId=" + requestId + ", producerRequestId=" + producerRequestId + ", engineId=" + engineId + ", host=" + host
                    + ", port=" + port + ", ppRank=" + ppRank + ", tpRank=" + tpRank + ", consumers=" + consumers + ", write=" + write
                    + ", blocks=" + blocks + ", epoch=" + epoch + ", consumerEpoch=" + consumerEpoch + ", grantKey=" + grantKey.length + " bytes]";
        }
    }

    /**
     * A producer rank's writes for a request are in place.
     *
     * @param requestId the consumer's request id.
     * @param producerRequestId the producer's id, which the consumer acknowledges.
     * @param epoch the consumer's epoch its registration named.
     */
    record PushDone(String requestId, String producerRequestId, long epoch) implements Message
    {
    }

    /**
     * A producer rank cannot write a request to the consumer, so the consumer need not wait for its
     * registration timeout.
     *
     * @param requestId the consumer's request id.
     * @param producerRequestId the producer's id.
     * @param code why, as the producer saw it.
     * @param reason the producer's message.
     * @param epoch the consumer's epoch its registration named.
     */
    record PushFailed(String requestId, String producerRequestId, ErrorCode code, String reason, long epoch) implements Message
    {
    }

    /**
     * Layers of a streamed request that a producer rank's write put in place, before the write that
     * completes it.
     *
     * @param requestId the consumer's request id.
     * @param producerRequestId the producer's id.
     * @param layers the consumer's names of the layers.
     * @param epoch the consumer's epoch its registration named.
     */
    record LayersLanded(String requestId, String producerRequestId, List<String> layers, long epoch) implements Message
    {
    }

    /** @param reason why the bytes are not a notification. */
    record Malformed(String reason) implements Message
    {
    }

    static byte[] completion(String producerRequestId, int consumers, long epoch)
    {
        return (producerRequestId + ":" + consumers + ":" + TransferParams.formatEpoch(epoch)).getBytes(US_ASCII);
    }

    static byte[] heartbeat(long epoch, List<String> requestIds)
    {
        return (HEARTBEAT + TransferParams.formatEpoch(epoch) + ":" + String.join(",", requestIds)).getBytes(US_ASCII);
    }

    private static byte[] grantKey(WireMap map)
    {
        byte[] key = map.requireBinary("grant_key");
        if (key.length > TransferBackend.MAX_GRANT_KEY_BYTES) {
            throw map.error("grant_key", key.length + " bytes (expected: at most " + TransferBackend.MAX_GRANT_KEY_BYTES + ")");
        }
        return key;
    }

    static byte[] registration(Registration registration)
    {
        return registration(REGISTRATION, registration);
    }

    static byte[] registration(String prefix, Registration registration)
    {
        byte[] body = new WireWriter().map(13)
                .string("request_id").string(registration.requestId())
                .string("producer_request_id").string(registration.producerRequestId())
                .string("engine_id").string(registration.engineId())
                .string("host").string(registration.host())
                .string("port").integer(registration.port())
                .string("pp_rank").integer(registration.ppRank())
                .string("tp_rank").integer(registration.tpRank())
                .string("consumers").integer(registration.consumers())
                .string("write").bool(registration.write())
                .string("block_ids").binary(encodeBlocks(registration.blocks()))
                .string("epoch").integer(registration.epoch())
                .string("consumer_epoch").integer(registration.consumerEpoch())
                .string("grant_key").binary(registration.grantKey())
                .toByteArray();
        return prefixed(prefix, body);
    }

    static byte[] pushDone(String requestId, String producerRequestId, long epoch)
    {
        byte[] body = new WireWriter().map(3)
                .string("request_id").string(requestId)
                .string("producer_request_id").string(producerRequestId)
                .string("epoch").integer(epoch)
                .toByteArray();
        return prefixed(PUSH_DONE, body);
    }

    static byte[] pushFailed(String requestId, String producerRequestId, ErrorCode code, String reason, long epoch)
    {
        byte[] body = new WireWriter().map(5)
                .string("request_id").string(requestId)
                .string("producer_request_id").string(producerRequestId)
                .string("code").string(code.id())
                .string("reason").string(abbreviate(reason, MAX_REASON_CHARS))
                .string("epoch").integer(epoch)
                .toByteArray();
        return prefixed(PUSH_FAILED, body);
    }

    static byte[] layersLanded(String requestId, String producerRequestId, List<String> layers, long epoch)
    {
        WireWriter writer = new WireWriter().map(4)
                .string("request_id").string(requestId)
                .string("producer_request_id").string(producerRequestId)
                .string("epoch").integer(epoch)
                .string("layers").array(layers.size());
        for (String layer : layers) {
            writer.string(layer);
        }
        return prefixed(LAYERS_LANDED, writer.toByteArray());
    }

    static byte[] prefixed(String prefix, byte[] body)
    {
        byte[] message = Arrays.copyOf(prefix.getBytes(US_ASCII), prefix.length() + body.length);
        System.arraycopy(body, 0, message, prefix.length(), body.length);
        return message;
    }

    static Message parse(byte[] message)
    {
        try {
            if (startsWith(message, REGISTRATION)) {
                return parseRegistration(WireDecoder.decodeMap(Arrays.copyOfRange(message, REGISTRATION.length(), message.length), LIMITS, "push registration"));
            }
            if (startsWith(message, PullMessages.WATCH) || startsWith(message, PullMessages.LAYERS)) {
                return PullMessages.parse(message, LIMITS);
            }
            if (startsWith(message, PUSH_DONE)) {
                WireMap map = WireDecoder.decodeMap(Arrays.copyOfRange(message, PUSH_DONE.length(), message.length), LIMITS, "push completion");
                return new PushDone(id(map, "request_id"), id(map, "producer_request_id"), epoch(map, "epoch"));
            }
            if (startsWith(message, LAYERS_LANDED)) {
                WireMap map = WireDecoder.decodeMap(Arrays.copyOfRange(message, LAYERS_LANDED.length(), message.length), LIMITS, "landed layers");
                return new LayersLanded(id(map, "request_id"), id(map, "producer_request_id"), List.copyOf(map.requireStrings("layers")), epoch(map, "epoch"));
            }
            if (startsWith(message, PUSH_FAILED)) {
                WireMap map = WireDecoder.decodeMap(Arrays.copyOfRange(message, PUSH_FAILED.length(), message.length), LIMITS, "push failure");
                String codeId = map.requireString("code");
                ErrorCode code = Arrays.stream(ErrorCode.values()).filter(known -> known.id().equals(codeId)).findFirst().orElse(ErrorCode.TRANSFER_FAILED);
                String reason = abbreviate(map.requireString("reason"), MAX_REASON_CHARS);
                return new PushFailed(id(map, "request_id"), id(map, "producer_request_id"), code,
                        code.id().equals(codeId) ? reason : "(" + abbreviate(codeId) + ") " + reason, epoch(map, "epoch"));
            }
            if (message.length > RequestIds.MAX_LENGTH * 4096) {
                return new Malformed("notification of " + message.length + " bytes is too large");
            }
            String text = new String(message, UTF_8);
            if (text.startsWith(HEARTBEAT)) {
                int end = HEARTBEAT.length() + EPOCH_DIGITS;
                long epoch = text.length() > end && text.charAt(end) == ':' ? parseEpoch(text.substring(HEARTBEAT.length(), end)) : 0;
                if (epoch == 0) {
                    return new Malformed("heartbeat " + abbreviate(text) + " does not start with 'HB:<epoch>:' (16 hex digits, not all zero)");
                }
                List<String> ids = new ArrayList<>();
                for (String id : text.substring(end + 1).split(",", -1)) {
                    if (RequestIds.problem(id) == null) {
                        ids.add(id);
                    }
                }
                return new Heartbeat(epoch, ids);
            }
            int epochColon = text.length() - EPOCH_DIGITS - 1;
            long epoch = epochColon > 0 && text.charAt(epochColon) == ':' ? parseEpoch(text.substring(epochColon + 1)) : 0;
            int colon = epoch == 0 ? -1 : text.lastIndexOf(':', epochColon - 1);
            if (colon <= 0) {
                return new Malformed("notification " + abbreviate(text) + " is neither a heartbeat, a registration nor"
                        + " '<request id>:<consumers>:<epoch>'");
            }
            text = text.substring(0, epochColon);
            String id = text.substring(0, colon);
            String problem = RequestIds.problem(id);
            if (problem != null) {
                return new Malformed(problem);
            }
            int consumers;
            try {
                consumers = Integer.parseInt(text.substring(colon + 1));
            }
            catch (NumberFormatException e) {
                return new Malformed("notification " + abbreviate(text) + " has consumers=" + abbreviate(text.substring(colon + 1)) + ", not an integer");
            }
            if (consumers < 1 || consumers > 1 << 16) {
                return new Malformed("notification " + abbreviate(text) + " has consumers=" + consumers + " (expected: 1..65536)");
            }
            return new Completion(id, consumers, epoch);
        }
        catch (KvBridgeException e) {
            return new Malformed(e.getMessage());
        }
    }

    static Registration parseRegistration(WireMap map)
    {
        String producerRequestId = map.optionalString("producer_request_id", "");
        if (!producerRequestId.isEmpty()) {
            checkId(map, "producer_request_id", producerRequestId);
        }
        int port = map.requireInt("port");
        int ppRank = map.requireInt("pp_rank");
        int tpRank = map.requireInt("tp_rank");
        int consumers = map.requireInt("consumers");
        if (port < 1 || port > 65_535 || ppRank < 0 || tpRank < 0 || consumers < 1 || consumers > 1 << 16) {
            throw map.error("port", String.format(Locale.ROOT, "port=%d pp_rank=%d tp_rank=%d consumers=%d out of range", port, ppRank, tpRank, consumers));
        }
        String host = map.requireString("host");
        String engineId = map.requireString("engine_id");
        if (host.isEmpty() || engineId.isEmpty()) {
            throw map.error("host", "host and engine_id must not be empty");
        }
        return new Registration(id(map, "request_id"), producerRequestId, engineId, host, port, ppRank, tpRank, consumers,
                map.optionalBoolean("write", true), decodeBlocks(map.requireBinary("block_ids")), epoch(map, "epoch"), epoch(map, "consumer_epoch"),
                grantKey(map));
    }

    static long epoch(WireMap map, String key)
    {
        long epoch = map.requireLong(key);
        if (epoch == TransferParams.UNKNOWN_EPOCH) {
            throw map.error(key, "is 0, which no engine draws");
        }
        return epoch;
    }

    /** {@return the epoch of exactly 16 lower-case hex digits, or 0 for anything else} */
    private static long parseEpoch(String digits)
    {
        if (digits.length() != EPOCH_DIGITS) {
            return 0;
        }
        for (int i = 0; i < digits.length(); i++) {
            char c = digits.charAt(i);
            if ((c < '0' || c > '9') && (c < 'a' || c > 'f')) {
                return 0;
            }
        }
        return Long.parseUnsignedLong(digits, 16);
    }

    static String id(WireMap map, String key)
    {
        String id = map.requireString(key);
        checkId(map, key, id);
        return id;
    }

    private static void checkId(WireMap map, String key, String id)
    {
        String problem = RequestIds.problem(id);
        if (problem != null) {
            throw map.error(key, problem);
        }
    }

    static byte[] encodeBlocks(BlockIds blocks)
    {
        ByteBuffer buffer = ByteBuffer.allocate(4 + 4 * blocks.groupCount() + 4 * blocks.total());
        buffer.putInt(blocks.groupCount());
        for (int g = 0; g < blocks.groupCount(); g++) {
            buffer.putInt(blocks.size(g));
            for (int i = 0; i < blocks.size(g); i++) {
                buffer.putInt(blocks.get(g, i));
            }
        }
        return buffer.array();
    }

    static BlockIds decodeBlocks(byte[] bytes)
    {
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        int groups = readCount(buffer, MAX_GROUPS, "groups");
        int[][] ids = new int[groups][];
        for (int g = 0; g < groups; g++) {
            int count = readCount(buffer, buffer.remaining() / 4, "block ids of group " + g);
            ids[g] = new int[count];
            for (int i = 0; i < count; i++) {
                ids[g][i] = buffer.getInt();
                if (ids[g][i] < 0) {
                    throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "block id=" + ids[g][i] + " of group " + g + " is negative");
                }
            }
        }
        if (buffer.hasRemaining()) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, buffer.remaining() + " trailing bytes after the block ids");
        }
        return BlockIds.of(ids);
    }

    private static int readCount(ByteBuffer buffer, int max, String what)
    {
        if (buffer.remaining() < 4) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "block ids end before the count of " + what);
        }
        int count = buffer.getInt();
        if (count < 0 || count > max) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "count of " + what + "=" + count + " is outside [0, " + max + "]");
        }
        return count;
    }

    static boolean startsWith(byte[] message, String prefix)
    {
        if (message.length < prefix.length()) {
            return false;
        }
        for (int i = 0; i < prefix.length(); i++) {
            if (message[i] != prefix.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    static String abbreviate(String text)
    {
        return abbreviate(text, 80);
    }

    private static String abbreviate(String text, int chars)
    {
        return text.length() <= chars ? text : text.substring(0, chars) + "...";
    }
}
