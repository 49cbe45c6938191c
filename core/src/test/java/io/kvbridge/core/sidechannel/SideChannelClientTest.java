package io.kvbridge.core.sidechannel;

import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.AllocationMeter;
import io.kvbridge.core.wire.CompatibilityHash;
import io.kvbridge.core.wire.CompatibilityMode;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.MessageAuthenticator;
import io.kvbridge.core.wire.MessageAuthenticator.Direction;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.Trees;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.core.wire.WireWriter;
import io.kvbridge.spi.ErrorCode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
final class SideChannelClientTest
{
    private static final WireLimits LIMITS = WireLimits.DEFAULT;
    private static final RankKey RANK = new RankKey(0, 0);
    private static final RankMetadata METADATA = SideChannelFixtures.engine("prefill-0", 1, 1).getFirst();
    private static final HandshakeVerifier VERIFIER = new HandshakeVerifier(METADATA.geometry().model(), CompatibilityMode.STRICT, LIMITS);

    private static SideChannelClient client(SideChannelSettings.Builder settings)
    {
        return new SideChannelClient(settings.build(), SideChannelClock.system());
    }

    private static byte[] okReply(byte[] payload)
    {
        byte[] content = new WireWriter().value(Map.of("status", "ok", "payload", payload, "clock_nanos", 5L)).toByteArray();
        return MessageAuthenticator.unauthenticated(LIMITS).seal(Direction.REPLY, content, new byte[0]).content();
    }

    @Test
    void failsByTheReadTimeoutWhenThePeerAcceptsAndNeverAnswers()
            throws IOException
    {
        try (TestingPeer peer = TestingPeer.silent()) {
            SideChannelClient client = client(SideChannelFixtures.fast().readTimeout(Duration.ofMillis(300)).handshakeTimeout(Duration.ofSeconds(10)));
            long start = System.nanoTime();
            assertError(ErrorCode.DEADLINE_EXCEEDED, () -> client.fetch(peer.address(), List.of(RANK)),
                    "no reply from the side channel at", "within readTimeout=PT0.3S for rank pp0:tp0",
                    "the peer accepted the connection but did not answer");
            long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(elapsedMillis >= 250 && elapsedMillis < 3_000, "failed after " + elapsedMillis + " ms");
        }
    }

    @Test
    void failsByTheHandshakeDeadlineWhenThePeerDripsBytes()
            throws IOException
    {
        // one byte of a long frame every 100 ms: no single read times out, the deadline must
        try (TestingPeer peer = new TestingPeer((in, out) -> {
            Frames.read(in, 1 << 20, "request");
            out.write(new byte[] {0, 0, 1, 0});
            for (int i = 0; i < 600; i++) {
                out.write(0x90);
                out.flush();
                Thread.sleep(100);
            }
        })) {
            SideChannelClient client = client(SideChannelFixtures.fast().readTimeout(Duration.ofSeconds(2)).handshakeTimeout(Duration.ofMillis(600)));
            long start = System.nanoTime();
            assertError(ErrorCode.DEADLINE_EXCEEDED, () -> client.fetch(peer.address(), List.of(RANK)), "ran past handshakeTimeout=PT0.6S");
            long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(elapsedMillis >= 550 && elapsedMillis < 3_000, "failed after " + elapsedMillis + " ms");
        }
    }

    @Test
    void boundsWhatOneHandshakeReadsInTotalWhateverEachReplyClaims()
            throws IOException
    {
        // every reply is within maxFrameBytes, but eight of them are not within maxHandshakeBytes: the
        // client stops at the reply that would cross the bound, before reading it
        byte[] big = okReply(new byte[3 << 20]);
        try (TestingPeer peer = new TestingPeer((in, out) -> {
            while (Frames.read(in, 1 << 20, "request") != null) {
                Frames.write(out, big);
            }
        })) {
            SideChannelClient client = client(SideChannelFixtures.fast().maxHandshakeBytes(8L << 20));
            List<RankKey> ranks = new java.util.ArrayList<>();
            for (int tp = 0; tp < 8; tp++) {
                ranks.add(new RankKey(0, tp));
            }
            long before = AllocationMeter.allocatedBytes();
            assertError(ErrorCode.PROTOCOL_ERROR, () -> client.fetch(peer.address(), ranks),
                    "would read more than maxHandshakeBytes=8388608", "in 2 replies so far", "the reply for rank pp0:tp2 announces length=" + big.length,
                    "raise maxHandshakeBytes");
            // decoding copies what was read a few times, but never more than the bound allows: eight replies would be 72 MiB
            long allocated = AllocationMeter.allocatedBytes() - before;
            assertTrue(allocated < 4 * (8L << 20), "the refused handshake allocated " + allocated + " bytes");
        }
        assertError(ErrorCode.CONFIG_INVALID, () -> SideChannelSettings.builder().maxHandshakeBytes(0).build(), "maxHandshakeBytes=0 is not positive");
    }

    @Test
    void reportsAnAddressWhereNothingListens()
            throws IOException
    {
        InetSocketAddress address;
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            address = new InetSocketAddress(socket.getInetAddress(), socket.getLocalPort());
        }
        InetSocketAddress closed = address;
        assertError(ErrorCode.PEER_UNKNOWN, () -> client(SideChannelFixtures.fast()).fetch(closed, List.of(RANK)), "cannot connect to the side channel at",
                "is the peer engine running");
    }

    @Test
    void reportsAPeerThatClosesWithoutAnswering()
            throws IOException
    {
        try (TestingPeer peer = new TestingPeer((in, out) -> Frames.read(in, 1 << 20, "request"))) {
            assertError(ErrorCode.HANDSHAKE_FAILED, () -> client(SideChannelFixtures.fast()).fetch(peer.address(), List.of(RANK)),
                    "closed the connection without answering the request for rank pp0:tp0");
        }
    }

    @Test
    void rejectsAReplyThatIsNotMsgpack()
            throws IOException
    {
        try (TestingPeer peer = TestingPeer.replying("<html>not a side channel</html>".getBytes(StandardCharsets.US_ASCII))) {
            assertError(ErrorCode.PROTOCOL_ERROR, () -> client(SideChannelFixtures.fast()).fetch(peer.address(), List.of(RANK)), "side channel envelope");
        }
    }

    @Test
    void rejectsAReplyWithWrongFieldTypes()
            throws IOException
    {
        byte[] content = new WireWriter().value(Map.of("status", "ok", "payload", "not binary", "clock_nanos", 5L)).toByteArray();
        byte[] reply = MessageAuthenticator.unauthenticated(LIMITS).seal(Direction.REPLY, content, new byte[0]).content();
        try (TestingPeer peer = TestingPeer.replying(reply)) {
            assertError(ErrorCode.PROTOCOL_ERROR, () -> client(SideChannelFixtures.fast()).fetch(peer.address(), List.of(RANK)),
                    "side channel reply field payload: expected binary, got a string");
        }
    }

    /** Serves a payload from a fake peer and returns what the client fetched. */
    private static byte[] fetchedFromPeerServing(byte[] payload)
            throws IOException
    {
        try (TestingPeer peer = TestingPeer.replying(okReply(payload))) {
            return client(SideChannelFixtures.fast()).fetch(peer.address(), List.of(RANK)).getFirst().payload();
        }
    }

    @Test
    void rejectsAPayloadThatIsNotMsgpack()
            throws IOException
    {
        byte[] fetched = fetchedFromPeerServing(new byte[] {(byte) 0xc1, 7});
        assertError(ErrorCode.PROTOCOL_ERROR, () -> VERIFIER.verify(fetched), "handshake payload is not valid msgpack");
    }

    @Test
    void rejectsAValidPayloadWhoseMetadataIsNotMsgpack()
            throws IOException
    {
        byte[] fetched = fetchedFromPeerServing(new HandshakePayload(HandshakePayload.WIRE_VERSION, CompatibilityHash.of(METADATA.geometry().model()),
                "garbage".getBytes(StandardCharsets.US_ASCII)).encode());
        assertError(ErrorCode.PROTOCOL_ERROR, () -> VERIFIER.verify(fetched), "peer metadata");
    }

    @Test
    void rejectsMetadataMissingRequiredFields()
            throws IOException
    {
        Map<String, Object> tree = Trees.tree(METADATA);
        tree.remove("regions");
        byte[] fetched = fetchedFromPeerServing(new HandshakePayload(HandshakePayload.WIRE_VERSION, CompatibilityHash.of(METADATA.geometry().model()),
                Trees.encode(tree)).encode());
        assertError(ErrorCode.PROTOCOL_ERROR, () -> VERIFIER.verify(fetched), "peer metadata field regions: required field is missing");
    }

    @Test
    void refusesAReplyFrameClaimingFourGibibytes()
            throws IOException
    {
        try (TestingPeer peer = new TestingPeer((in, out) -> {
            Frames.read(in, 1 << 20, "request");
            out.write(new byte[] {-1, -1, -1, -1});
            out.flush();
            Thread.sleep(60_000);
        })) {
            assertError(ErrorCode.PROTOCOL_ERROR, () -> client(SideChannelFixtures.fast()).fetch(peer.address(), List.of(RANK)),
                    "reply frame length=4294967295 exceeds the limit of 16777216 bytes");
        }
    }

    @Test
    void estimatesTheClockOffsetFromTheRoundTrip()
    {
        long offset = TimeUnit.SECONDS.toNanos(5);
        SideChannelClock ahead = new SideChannelClock()
        {
            @Override
            public long monotonicNanos()
            {
                return System.nanoTime() + offset;
            }

            @Override
            public Instant instant()
            {
                return Instant.now();
            }
        };
        try (SideChannelServer server = SideChannelServer.start("prefill-0", List.of(METADATA), SideChannelFixtures.fast().build(), ahead)) {
            SideChannelClient client = client(SideChannelFixtures.fast());
            ClockOffset best = null;
            for (int i = 0; i < 5; i++) {
                ClockOffset sample = client.fetch(server.address(), List.of(RANK)).getFirst().clockSample();
                // the true offset lies within half a round trip of every sample
                assertTrue(Math.abs(sample.offsetNanos() - offset) <= sample.roundTripNanos() / 2 + 1_000_000,
                        "offset=" + sample.offsetNanos() + " roundTrip=" + sample.roundTripNanos());
                best = sample.better(best);
            }
            assertTrue(best.roundTripNanos() < TimeUnit.SECONDS.toNanos(1));
            assertEquals(offset, best.toRemoteNanos(0), best.roundTripNanos() / 2 + 1_000_000);
        }
    }
}
