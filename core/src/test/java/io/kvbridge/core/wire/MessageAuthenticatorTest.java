package io.kvbridge.core.wire;

import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.MessageAuthenticator.Direction;
import io.kvbridge.core.wire.MessageAuthenticator.Opened;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
final class MessageAuthenticatorTest
{
    private static final byte[] SECRET = "0123456789abcdef-shared-secret".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] OTHER_SECRET = "fedcba9876543210-other-secret".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CONTENT = "{get metadata of rank pp0:tp1}".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NO_NONCE = new byte[0];

    private final AtomicLong nowMillis = new AtomicLong(1_750_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(nowMillis.get());

    private MessageAuthenticator authenticator(byte[] secret)
    {
        return MessageAuthenticator.withSecret(secret, Duration.ofSeconds(30), 1_000, clock, WireLimits.DEFAULT);
    }

    @Test
    void opensWhatItSealed()
    {
        MessageAuthenticator sender = authenticator(SECRET);
        MessageAuthenticator receiver = authenticator(SECRET);
        Opened sealed = sender.seal(Direction.REQUEST, CONTENT, NO_NONCE);
        Opened opened = receiver.open(Direction.REQUEST, sealed.content(), NO_NONCE);
        assertArrayEquals(CONTENT, opened.content());
        assertArrayEquals(sealed.nonce(), opened.nonce());
        assertEquals(MessageAuthenticator.NONCE_BYTES, opened.nonce().length);
        assertEquals(1, receiver.counters().accepted());
        assertEquals(0, receiver.counters().rejected());
    }

    @Test
    void rejectsEveryTamperedByte()
    {
        MessageAuthenticator sender = authenticator(SECRET);
        MessageAuthenticator receiver = authenticator(SECRET);
        byte[] envelope = sender.seal(Direction.REQUEST, CONTENT, NO_NONCE).content();
        for (int i = 0; i < envelope.length; i++) {
            for (int bit : new int[] {0x01, 0x80}) {
                byte[] tampered = envelope.clone();
                tampered[i] ^= (byte) bit;
                KvBridgeException e = assertThrows(KvBridgeException.class, () -> receiver.open(Direction.REQUEST, tampered, NO_NONCE),
                        "flipping bit " + bit + " of byte " + i + " went unnoticed");
                assertTrue(e.code() == ErrorCode.AUTHENTICATION_FAILED || e.code() == ErrorCode.PROTOCOL_ERROR, e.getMessage());
            }
        }
        assertEquals(0, receiver.counters().accepted());
        assertTrue(receiver.counters().badMac() > 0);
        // the original still opens: no tampered copy consumed its nonce
        assertArrayEquals(CONTENT, receiver.open(Direction.REQUEST, envelope, NO_NONCE).content());
    }

    @Test
    void rejectsAReplayedMessage()
    {
        MessageAuthenticator receiver = authenticator(SECRET);
        byte[] envelope = authenticator(SECRET).seal(Direction.REQUEST, CONTENT, NO_NONCE).content();
        receiver.open(Direction.REQUEST, envelope, NO_NONCE);
        assertError(ErrorCode.AUTHENTICATION_FAILED, () -> receiver.open(Direction.REQUEST, envelope, NO_NONCE), "repeats a nonce", "replayed");
        assertEquals(1, receiver.counters().replayed());
        assertEquals(1, receiver.counters().accepted());
    }

    @Test
    void rejectsAWrongSecret()
    {
        MessageAuthenticator receiver = authenticator(SECRET);
        byte[] envelope = authenticator(OTHER_SECRET).seal(Direction.REQUEST, CONTENT, NO_NONCE).content();
        assertError(ErrorCode.AUTHENTICATION_FAILED, () -> receiver.open(Direction.REQUEST, envelope, NO_NONCE), "MAC that does not verify",
                "different shared secrets");
        assertEquals(1, receiver.counters().badMac());
    }

    @Test
    void rejectsStaleAndFutureTimestamps()
    {
        MessageAuthenticator receiver = authenticator(SECRET);
        byte[] old = authenticator(SECRET).seal(Direction.REQUEST, CONTENT, NO_NONCE).content();
        nowMillis.addAndGet(30_001);
        assertError(ErrorCode.AUTHENTICATION_FAILED, () -> receiver.open(Direction.REQUEST, old, NO_NONCE), "outside window=30000 ms");
        byte[] future = authenticator(SECRET).seal(Direction.REQUEST, CONTENT, NO_NONCE).content();
        nowMillis.addAndGet(-30_001);
        assertError(ErrorCode.AUTHENTICATION_FAILED, () -> receiver.open(Direction.REQUEST, future, NO_NONCE), "outside window=30000 ms");
        assertEquals(2, receiver.counters().stale());
        nowMillis.addAndGet(30_000);
        assertArrayEquals(CONTENT, receiver.open(Direction.REQUEST, old, NO_NONCE).content());
    }

    @Test
    void rejectsAMessageWithoutMacWhenASecretIsConfigured()
    {
        MessageAuthenticator receiver = authenticator(SECRET);
        byte[] plain = MessageAuthenticator.unauthenticated(WireLimits.DEFAULT).seal(Direction.REQUEST, CONTENT, NO_NONCE).content();
        assertError(ErrorCode.AUTHENTICATION_FAILED, () -> receiver.open(Direction.REQUEST, plain, NO_NONCE), "carries no MAC");
        assertEquals(1, receiver.counters().unauthenticated());
    }

    @Test
    void bindsDirectionAndTheAnsweredRequest()
    {
        MessageAuthenticator server = authenticator(SECRET);
        MessageAuthenticator client = authenticator(SECRET);
        Opened request = client.seal(Direction.REQUEST, CONTENT, NO_NONCE);
        // a request echoed back cannot pass as a reply
        assertError(ErrorCode.AUTHENTICATION_FAILED, () -> client.open(Direction.REPLY, request.content(), request.nonce()), "does not verify");
        Opened opened = server.open(Direction.REQUEST, request.content(), NO_NONCE);
        byte[] reply = server.seal(Direction.REPLY, CONTENT, opened.nonce()).content();
        // a reply to another request does not verify
        Opened otherRequest = client.seal(Direction.REQUEST, CONTENT, NO_NONCE);
        assertError(ErrorCode.AUTHENTICATION_FAILED, () -> client.open(Direction.REPLY, reply, otherRequest.nonce()), "does not verify");
        assertArrayEquals(CONTENT, client.open(Direction.REPLY, reply, request.nonce()).content());
    }

    @Test
    void forgetsNoncesOnceTheWindowHasPassedAndBoundsTheCache()
    {
        MessageAuthenticator receiver = MessageAuthenticator.withSecret(SECRET, Duration.ofSeconds(30), 2, clock, WireLimits.DEFAULT);
        MessageAuthenticator sender = authenticator(SECRET);
        receiver.open(Direction.REQUEST, sender.seal(Direction.REQUEST, CONTENT, NO_NONCE).content(), NO_NONCE);
        receiver.open(Direction.REQUEST, sender.seal(Direction.REQUEST, CONTENT, NO_NONCE).content(), NO_NONCE);
        byte[] third = sender.seal(Direction.REQUEST, CONTENT, NO_NONCE).content();
        assertError(ErrorCode.AUTHENTICATION_FAILED, () -> receiver.open(Direction.REQUEST, third, NO_NONCE), "maxRememberedNonces=2");
        assertEquals(1, receiver.counters().overloaded());
        // once the first two are older than the window they are forgotten and a new message fits
        nowMillis.addAndGet(30_001);
        receiver.open(Direction.REQUEST, sender.seal(Direction.REQUEST, CONTENT, NO_NONCE).content(), NO_NONCE);
        assertEquals(3, receiver.counters().accepted());
    }

    @Test
    void withoutASecretAcceptsEverythingAndAddsNoMac()
    {
        MessageAuthenticator plain = MessageAuthenticator.unauthenticated(WireLimits.DEFAULT);
        assertFalse(plain.authenticated());
        Opened sealed = plain.seal(Direction.REQUEST, CONTENT, NO_NONCE);
        assertEquals(0, sealed.nonce().length);
        assertArrayEquals(CONTENT, plain.open(Direction.REQUEST, sealed.content(), NO_NONCE).content());
        assertArrayEquals(CONTENT, plain.open(Direction.REQUEST, sealed.content(), NO_NONCE).content());
        // an authenticated message still opens: the MAC is ignored, not required
        assertArrayEquals(CONTENT, plain.open(Direction.REQUEST, authenticator(SECRET).seal(Direction.REQUEST, CONTENT, NO_NONCE).content(), NO_NONCE)
                .content());
    }

    @Test
    void refusesShortSecrets()
    {
        assertError(ErrorCode.CONFIG_INVALID, () -> authenticator(new byte[15]), "secret of 15 bytes is too short");
    }
}
