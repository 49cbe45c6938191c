package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

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
 *   request: {"type": "get_metadata", "pp_rank": int, "tp_rank": int}
 *   reply:   {"status": "ok", "payload": bin, "clock_nanos": int}
 *          | {"status": "error", "code": str, "message": str}
 * </pre>
 */
final class SideChannelMessages
{
    static final String GET_METADATA = "get_metadata";

    private SideChannelMessages()
    {
    }

    /**
     * A decoded reply.
     *
     * @param payload the rank's handshake payload; null for an error.
     * @param clockNanos the server's monotonic clock when it replied.
     * @param errorCode the error's code id; null when ok.
     * @param errorMessage the error's message; null when ok.
     */
    record Reply(byte[] payload, long clockNanos, String errorCode, String errorMessage)
    {
        boolean ok()
        {
            return payload != null;
        }
    }

    static byte[] request(RankKey rank)
    {
        return new WireWriter().map(3)
                .string("type").string(GET_METADATA)
                .string("pp_rank").integer(rank.ppRank())
                .string("tp_rank").integer(rank.tpRank())
                .toByteArray();
    }

    static RankKey decodeRequest(byte[] content, WireLimits limits)
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
        return new RankKey(ppRank, tpRank);
    }

    static byte[] okReply(byte[] payload, long clockNanos)
    {
        return new WireWriter().map(3)
                .string("status").string("ok")
                .string("payload").binary(payload)
                .string("clock_nanos").integer(clockNanos)
                .toByteArray();
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
            case "ok" -> new Reply(map.requireBinary("payload"), map.requireLong("clock_nanos"), null, null);
            case "error" -> new Reply(null, 0, map.optionalString("code", "unknown"), map.optionalString("message", ""));
            default -> throw map.error("status", "value=" + status + " is not one of [ok, error]");
        };
    }
}
