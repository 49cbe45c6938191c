package io.kvbridge.core.sidechannel;

import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.CompatibilityMode;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.MessageAuthenticator;
import io.kvbridge.core.wire.MessageAuthenticator.Direction;
import io.kvbridge.core.wire.MessageAuthenticator.Opened;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.ErrorCode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
final class AuthenticatedSideChannelTest
{
    private static final byte[] SECRET = "the-secret-both-engines-share-32".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] WRONG_SECRET = "a-secret-the-server-does-not-use".getBytes(StandardCharsets.US_ASCII);
    private static final RankKey RANK = new RankKey(0, 0);
    private static final RankMetadata METADATA = SideChannelFixtures.engine("prefill-0", 1, 1).getFirst();
    private static final WireLimits LIMITS = WireLimits.DEFAULT;

    private static SideChannelServer server(byte[] secret)
    {
        return SideChannelServer.start("prefill-0", List.of(METADATA), SideChannelFixtures.fast().secret(secret).build(), SideChannelClock.system());
    }

    private static SideChannelClient client(byte[] secret)
    {
        return new SideChannelClient(SideChannelFixtures.fast().secret(secret).build(), SideChannelClock.system());
    }

    private static void assertServed(SideChannelServer server)
    {
        SideChannelClient client = client(SECRET);
        byte[] payload = client.fetch(server.address(), List.of(RANK)).getFirst().payload();
        assertEquals(METADATA, new HandshakeVerifier(METADATA.geometry().model(), CompatibilityMode.STRICT, LIMITS).verify(payload).metadata());
        assertEquals(1, client.authentication().accepted());
    }

    private static byte[] sealedRequest(byte[] secret, InstantSource clock)
    {
        return MessageAuthenticator.withSecret(secret, Duration.ofSeconds(30), 100, clock, LIMITS)
                .seal(Direction.REQUEST, SideChannelMessages.request(RANK), new byte[0]).content();
    }

    private static String refusal(RawConnection connection)
            throws IOException
    {
        byte[] frame = connection.readFrame();
        assertNotNull(frame, "closed without an error reply");
        SideChannelMessages.Reply reply = SideChannelMessages.decodeReply(
                MessageAuthenticator.unauthenticated(LIMITS).open(Direction.REPLY, frame, new byte[0]).content(), LIMITS);
        assertEquals(ErrorCode.AUTHENTICATION_FAILED.id(), reply.errorCode());
        return reply.errorMessage();
    }

    @Test
    void peersSharingTheSecretShakeHands()
    {
        try (SideChannelServer server = server(SECRET)) {
            assertServed(server);
            assertServed(server);
            assertEquals(2, server.authentication().accepted());
            assertEquals(0, server.authentication().rejected());
        }
    }

    @Test
    void aWrongSecretIsRejectedAndCountedWhileOthersAreServed()
    {
        try (SideChannelServer server = server(SECRET)) {
            assertError(ErrorCode.AUTHENTICATION_FAILED, () -> client(WRONG_SECRET).fetch(server.address(), List.of(RANK)),
                    "refused our request (unauthenticated reply)", "MAC that does not verify");
            assertEquals(1, server.authentication().badMac());
            assertServed(server);
        }
    }

    @Test
    void aReplayedRequestIsRejected()
            throws IOException
    {
        try (SideChannelServer server = server(SECRET)) {
            byte[] request = sealedRequest(SECRET, InstantSource.system());
            try (RawConnection first = new RawConnection(server.address())) {
                first.sendFrame(request);
                byte[] reply = first.readFrame();
                assertNotNull(reply);
            }
            try (RawConnection replay = new RawConnection(server.address())) {
                replay.sendFrame(request);
                assertTrue(refusal(replay).contains("repeats a nonce"));
            }
            assertEquals(1, server.authentication().replayed());
            assertEquals(1, server.requestsServed());
            assertServed(server);
        }
    }

    @Test
    void aTamperedRequestIsRejected()
            throws IOException
    {
        try (SideChannelServer server = server(SECRET)) {
            byte[] request = sealedRequest(SECRET, InstantSource.system());
            // the request's tp_rank is its content's last byte: ask for another rank without the secret
            int tpRank = indexOfContentEnd(request);
            request[tpRank] ^= 1;
            try (RawConnection connection = new RawConnection(server.address())) {
                connection.sendFrame(request);
                assertTrue(refusal(connection).contains("MAC that does not verify"));
            }
            assertEquals(1, server.authentication().badMac());
            assertServed(server);
        }
    }

    private static int indexOfContentEnd(byte[] envelope)
    {
        // envelope: {"content": bin8 <length> <content bytes> ...}; content starts after 0x84 0xa7 "content" 0xc4 <length>
        int contentStart = 1 + 1 + "content".length() + 2;
        int length = envelope[contentStart - 1] & 0xff;
        return contentStart + length - 1;
    }

    @Test
    void aStaleRequestIsRejected()
            throws IOException
    {
        try (SideChannelServer server = server(SECRET)) {
            InstantSource minuteAgo = InstantSource.offset(InstantSource.system(), Duration.ofMinutes(-1));
            try (RawConnection connection = new RawConnection(server.address())) {
                connection.sendFrame(sealedRequest(SECRET, minuteAgo));
                assertTrue(refusal(connection).contains("outside window=30000 ms"));
            }
            assertEquals(1, server.authentication().stale());
        }
    }

    @Test
    void anUnauthenticatedPeerIsRejectedOnEitherSide()
    {
        try (SideChannelServer server = server(SECRET)) {
            assertError(ErrorCode.AUTHENTICATION_FAILED, () -> client(new byte[0]).fetch(server.address(), List.of(RANK)), "carries no MAC");
            assertEquals(1, server.authentication().unauthenticated());
        }
        try (SideChannelServer server = server(new byte[0])) {
            SideChannelClient client = client(SECRET);
            assertError(ErrorCode.AUTHENTICATION_FAILED, () -> client.fetch(server.address(), List.of(RANK)), "the reply carries no MAC");
            assertEquals(1, client.authentication().unauthenticated());
        }
    }

    @Test
    void repliesAreBoundToTheirRequest()
            throws IOException
    {
        try (SideChannelServer server = server(SECRET)) {
            MessageAuthenticator client = MessageAuthenticator.withSecret(SECRET, Duration.ofSeconds(30), 100, InstantSource.system(), LIMITS);
            Opened first = client.seal(Direction.REQUEST, SideChannelMessages.request(RANK), new byte[0]);
            Opened second = client.seal(Direction.REQUEST, SideChannelMessages.request(RANK), new byte[0]);
            try (RawConnection connection = new RawConnection(server.address())) {
                connection.sendFrame(first.content());
                byte[] reply = connection.readFrame();
                // a reply captured for one request cannot answer another
                assertError(ErrorCode.AUTHENTICATION_FAILED, () -> client.open(Direction.REPLY, reply, second.nonce()), "does not verify");
                assertTrue(SideChannelMessages.decodeReply(client.open(Direction.REPLY, reply, first.nonce()).content(), LIMITS).ok());
            }
        }
    }
}
