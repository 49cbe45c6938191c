package io.kvbridge.core.sidechannel;

import static io.kvbridge.core.sidechannel.FramesTest.LIMIT;
import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.AllocationMeter;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.core.wire.WireWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Frames, requests and replies from hostile peers: only the typed protocol error escapes. */
final class SideChannelFuzzTest
{
    @Property(tries = 300)
    void refusesEveryLengthAboveTheLimitWithoutAllocating(@ForAll @LongRange(min = LIMIT + 1L, max = 0xffff_ffffL) long length)
    {
        byte[] header = ByteBuffer.allocate(4).putInt((int) length).array();
        long before = AllocationMeter.allocatedBytes();
        assertError(ErrorCode.PROTOCOL_ERROR, () -> Frames.read(new ByteArrayInputStream(header), LIMIT, "reply"), "length=" + length);
        long allocated = AllocationMeter.allocatedBytes() - before;
        assertTrue(allocated < 1 << 20, "refusing length=" + length + " allocated " + allocated + " bytes");
    }

    @Property(tries = 1_000)
    void randomFramesRaiseOnlyProtocolErrors(@ForAll @Size(max = 96) byte[] bytes)
    {
        onlyProtocolErrors(() -> Frames.read(new ByteArrayInputStream(bytes), 64, "request"));
        onlyProtocolErrors(() -> SideChannelMessages.decodeRequest(bytes, WireLimits.DEFAULT));
        onlyProtocolErrors(() -> SideChannelMessages.decodeReply(bytes, WireLimits.DEFAULT));
    }

    @Property(tries = 1_000)
    void mutatedRequestsAndRepliesRaiseOnlyProtocolErrors(@ForAll @IntRange(min = 0, max = 40) int at, @ForAll byte value,
            @ForAll @IntRange(min = 0, max = 40) int cut)
    {
        for (byte[] valid : List.of(SideChannelMessages.request(new RankKey(1, 3)), SideChannelMessages.okReply(new byte[] {1, 2, 3}, 99),
                SideChannelMessages.request(new RankKey(1, 3), "decode-consumer-pp0-tp0-1", new byte[16]),
                SideChannelMessages.okReply(new byte[] {1, 2, 3}, 99, new byte[16]),
                SideChannelMessages.errorReply(ErrorCode.PEER_UNKNOWN, "no such rank"))) {
            byte[] mutated = valid.clone();
            mutated[at % mutated.length] = value;
            byte[] truncated = Arrays.copyOf(mutated, Math.max(1, mutated.length - cut));
            onlyProtocolErrors(() -> SideChannelMessages.decodeRequest(truncated, WireLimits.DEFAULT));
            onlyProtocolErrors(() -> SideChannelMessages.decodeReply(truncated, WireLimits.DEFAULT));
        }
    }

    @Test
    void wronglyTypedOrDeeplyNestedSessionFieldsAreProtocolErrors()
    {
        Map<String, Object> base = Map.of("type", "get_metadata", "pp_rank", 0L, "tp_rank", 0L);
        Object nested = List.of();
        for (int i = 0; i < 40; i++) {
            nested = List.of(nested);
        }
        Map<String, Map<String, Object>> cases = Map.of(
                "agent is an integer", Map.of("agent", 7L, "session_nonce", new byte[16]),
                "agent is empty", Map.of("agent", "", "session_nonce", new byte[16]),
                "nonce is a string", Map.of("agent", "a", "session_nonce", "sixteen bytes!!!"),
                "nonce too short", Map.of("agent", "a", "session_nonce", new byte[15]),
                "nonce too long", Map.of("agent", "a", "session_nonce", new byte[17]),
                "nonce missing", Map.of("agent", "a"),
                "agent deeply nested", Map.of("agent", nested, "session_nonce", new byte[16]));
        for (Map.Entry<String, Map<String, Object>> entry : cases.entrySet()) {
            Map<String, Object> request = new HashMap<>(base);
            request.putAll(entry.getValue());
            byte[] bytes = new WireWriter().value(request).toByteArray();
            try {
                SideChannelMessages.decodeRequest(bytes, WireLimits.DEFAULT);
                throw new AssertionError(entry.getKey() + " was accepted");
            }
            catch (KvBridgeException e) {
                assertEquals(ErrorCode.PROTOCOL_ERROR, e.code(), entry.getKey());
            }
        }
        byte[] reply = new WireWriter().value(Map.of("status", "ok", "payload", new byte[1], "clock_nanos", 1L, "session_nonce", new byte[3]))
                .toByteArray();
        assertError(ErrorCode.PROTOCOL_ERROR, () -> SideChannelMessages.decodeReply(reply, WireLimits.DEFAULT), "session_nonce", "length=3");
    }

    private static void onlyProtocolErrors(Executable action)
    {
        try {
            action.execute();
        }
        catch (KvBridgeException e) {
            if (e.code() != ErrorCode.PROTOCOL_ERROR) {
                throw new AssertionError("escaped with " + e.code(), e);
            }
        }
        catch (Throwable e) {
            throw new AssertionError("escaped with " + e, e);
        }
    }
}
