package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.core.wire.WireDecoder;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.core.wire.WireMap;
import io.kvbridge.core.wire.WireWriter;
import io.kvbridge.spi.ErrorCode;

/**
 * The side channel's two messages. A request asks for one rank's payload; a reply carries it with
 * the server's monotonic clock, or names an error.
 *
 * <pre>
 *   request: {"type": "get_metadata", "pp_rank": int, "tp_rank": int, ["role": "producer" | "consumer"],
 *             ["agent": str, "session_nonce": bin(16)]}
 *   reply:   {"status": "ok", "payload": bin, "clock_nanos": int, ["session_nonce": bin(16)]}
 *          | {"status": "error", "code": str, "message": str}
 * </pre>
 *
 * <p>A request naming its transport agent and a nonce asks for a notification session; the reply
 * then carries the server's nonce (see {@link io.kvbridge.core.wire.SessionKey}). A request names
 * the role of the rank it wants ({@link ServedRole}) since an engine may serve a producer and a
 * consumer under one rank; a client of an earlier release names none.
 */
final class SideChannelMessages
{
    static final String GET_METADATA = "get_metadata";

    private SideChannelMessages()
    {
    }

    /**
     * A decoded request.
     *
     * @param rank the rank asked for.
     * @param role the role asked for; null when the client names none.
     * @param agent the client's transport agent name when it asks for a notification session, else null.
     * @param sessionNonce the client's session nonce, with {@code agent}; else null.
     */
    record Request(RankKey rank, ServedRole role, String agent, byte[] sessionNonce)
    {
    }

    /**
     * A decoded reply.
     *
     * @param payload the rank's handshake payload; null for an error.
     * @param clockNanos the server's monotonic clock when it replied.
     * @param errorCode the error's code id; null when ok.
     * @param errorMessage the error's message; null when ok.
     * @param sessionNonce the server's session nonce when it opened a session, else null.
     */
    record Reply(byte[] payload, long clockNanos, String errorCode, String errorMessage, byte[] sessionNonce)
    {
        boolean ok()
        {
            return payload != null;
        }
    }

    static byte[] request(RankKey rank)
    {
        return request(rank, null, null, null);
    }

    static byte[] request(RankKey rank, String agent, byte[] sessionNonce)
    {
        return request(rank, null, agent, sessionNonce);
    }

    static byte[] request(RankKey rank, ServedRole role, String agent, byte[] sessionNonce)
    {
        WireWriter writer = new WireWriter().map(3 + (role == null ? 0 : 1) + (agent == null ? 0 : 2))
                .string("type").string(GET_METADATA)
                .string("pp_rank").integer(rank.ppRank())
                .string("tp_rank").integer(rank.tpRank());
        if (role != null) {
            writer.string("role").string(role.wireName());
        }
        if (agent != null) {
            writer.string("agent").string(agent).string("session_nonce").binary(sessionNonce);
        }
        return writer.toByteArray();
    }

    static Request decodeRequest(byte[] content, WireLimits limits)
    {
        WireMap map = WireDecoder.decodeMap(content, limits, "side channel request");
        String type = map.requireString("type");
        if (!GET_METADATA.equals(type)) {
            throw map.error("type", "value=" + type + " is not a known request (expected: " + GET_METADATA + ")");
        }
        int ppRank = map.requireInt("pp_rank");
        int tpRank = map.requireInt("tp_rank");
        if (ppRank < 0 || tpRank < 0) {
            throw map.error("pp_rank", "pp_rank=" + ppRank + " tp_rank=" + tpRank + " must not be negative");
        }
        RankKey rank = new RankKey(ppRank, tpRank);
        ServedRole role = null;
        if (map.has("role")) {
            String name = map.requireString("role");
            role = ServedRole.fromWire(name);
            if (role == null) {
                throw map.error("role", "value=" + name + " is not a role (expected: producer or consumer)");
            }
        }
        if (!map.has("agent")) {
            return new Request(rank, role, null, null);
        }
        String agent = map.requireString("agent");
        if (agent.isEmpty()) {
            throw map.error("agent", "must not be empty");
        }
        return new Request(rank, role, agent, nonce(map));
    }

    private static byte[] nonce(WireMap map)
    {
        byte[] nonce = map.requireBinary("session_nonce");
        if (nonce.length != SessionKey.NONCE_BYTES) {
            throw map.error("session_nonce", "length=" + nonce.length + " (expected: " + SessionKey.NONCE_BYTES + ")");
        }
        return nonce;
    }

    static byte[] okReply(byte[] payload, long clockNanos)
    {
        return okReply(payload, clockNanos, null);
    }

    static byte[] okReply(byte[] payload, long clockNanos, byte[] sessionNonce)
    {
        WireWriter writer = new WireWriter().map(sessionNonce == null ? 3 : 4)
                .string("status").string("ok")
                .string("payload").binary(payload)
                .string("clock_nanos").integer(clockNanos);
        if (sessionNonce != null) {
            writer.string("session_nonce").binary(sessionNonce);
        }
        return writer.toByteArray();
    }

    static byte[] errorReply(ErrorCode code, String message)
    {
        requireNonNull(code, "code is null");
        return new WireWriter().map(3)
                .string("status").string("error")
                .string("code").string(code.id())
                .string("message").string(message)
                .toByteArray();
    }

    static Reply decodeReply(byte[] content, WireLimits limits)
    {
        WireMap map = WireDecoder.decodeMap(content, limits, "side channel reply");
        String status = map.requireString("status");
        return switch (status) {
            case "ok" -> new Reply(map.requireBinary("payload"), map.requireLong("clock_nanos"), null, null,
                    map.has("session_nonce") ? nonce(map) : null);
            case "error" -> new Reply(null, 0, map.optionalString("code", "unknown"), map.optionalString("message", ""), null);
            default -> throw map.error("status", "value=" + status + " is not one of [ok, error]");
        };
    }
}
