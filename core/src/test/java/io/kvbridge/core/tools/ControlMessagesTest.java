package io.kvbridge.core.tools;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.WireWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

final class ControlMessagesTest
{
    private static final byte[] SECRET = "a control link secret of 32 byte".getBytes(StandardCharsets.US_ASCII);

    @Test
    void aMessageIsTheMapTheWireWriterWrites()
    {
        byte[] built = ControlMessage.builder("hello").put("version", 2).put("transport", "tcp").put("grant_key", new byte[] {1, 2})
                .put("tcp", true).put("code", ErrorCode.DEADLINE_EXCEEDED).encode();
        // the bytes a bench of the previous release sends: both ends of a two-host bench still understand each other
        byte[] written = new WireWriter().map(6).string("type").string("hello").string("version").integer(2).string("transport").string("tcp")
                .string("grant_key").binary(new byte[] {1, 2}).string("tcp").bool(true).string("code").enumValue(ErrorCode.DEADLINE_EXCEEDED)
                .toByteArray();
        assertArrayEquals(written, built);
        ControlMessage read = ControlMessage.decode(built, "bench request");
        assertEquals("hello", read.type());
        assertEquals(2, read.requireInt("version"));
        assertEquals(2L, read.requireLong("version"));
        assertEquals("tcp", read.requireString("transport"));
        assertArrayEquals(new byte[] {1, 2}, read.requireBinary("grant_key"));
        assertTrue(read.optionalBoolean("tcp", false));
        assertEquals(ErrorCode.DEADLINE_EXCEEDED, read.optionalErrorCode("code", null));
        assertEquals("none", read.optionalString("reason", "none"));
        assertNull(read.optionalErrorCode("other", null));
    }

    @Test
    void untrustedMessagesAreRefusedNamingTheField()
    {
        ControlMessage read = ControlMessage.decode(ControlMessage.builder("ready").put("port", "5600").encode(), "bench reply");
        KvBridgeException mistyped = assertThrows(KvBridgeException.class, () -> read.requireInt("port"));
        assertEquals(ErrorCode.PROTOCOL_ERROR, mistyped.code());
        assertTrue(mistyped.getMessage().contains("port"), mistyped.getMessage());
        assertEquals(ErrorCode.PROTOCOL_ERROR, assertThrows(KvBridgeException.class, () -> read.requireLong("bytes")).code());
        assertEquals(ErrorCode.PROTOCOL_ERROR, assertThrows(KvBridgeException.class, () -> ControlMessage.decode(new byte[] {(byte) 0xc1}, "bench reply")).code());
        assertThrows(KvBridgeException.class, () -> ControlMessage.builder("x").put("type", "y"));
    }

    @Test
    void repliesAreBoundToTheirRequestAndForgeriesRefused()
    {
        ControlEnvelope initiator = ControlEnvelope.withSecret(SECRET);
        ControlEnvelope target = ControlEnvelope.withSecret(SECRET);
        assertTrue(initiator.authenticated());
        ControlEnvelope.Message request = initiator.sealRequest(ControlMessage.builder("probe").encode());
        ControlEnvelope.Message opened = target.openRequest(request.bytes());
        assertEquals("probe", ControlMessage.decode(opened.bytes(), "bench request").type());
        assertArrayEquals(request.nonce(), opened.nonce());
        // a replay of the same request is refused
        assertEquals(ErrorCode.AUTHENTICATION_FAILED, assertThrows(KvBridgeException.class, () -> target.openRequest(request.bytes())).code());

        byte[] reply = target.sealReply(ControlMessage.builder("probe_ready").put("port", 1).encode(), opened.nonce());
        assertEquals("probe_ready", ControlMessage.decode(initiator.openReply(reply, request.nonce()), "bench reply").type());
        // the same reply does not answer another request
        ControlEnvelope.Message other = initiator.sealRequest(ControlMessage.builder("probe").encode());
        assertThrows(KvBridgeException.class, () -> initiator.openReply(reply, other.nonce()));
        // an end without the secret is refused, and its own envelopes carry no MAC
        ControlEnvelope plain = ControlEnvelope.plain();
        assertFalse(plain.authenticated());
        assertEquals(ErrorCode.AUTHENTICATION_FAILED,
                assertThrows(KvBridgeException.class, () -> target.openRequest(plain.sealRequest(ControlMessage.builder("probe").encode()).bytes())).code());
        assertEquals(ErrorCode.CONFIG_INVALID, assertThrows(KvBridgeException.class, () -> ControlEnvelope.withSecret(new byte[4])).code());
    }
}
