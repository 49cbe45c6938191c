package io.kvbridge.core.sidechannel;

import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.kvbridge.core.wire.CompatibilityMode;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.MessageAuthenticator;
import io.kvbridge.core.wire.MessageAuthenticator.Direction;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.core.wire.WireWriter;
import io.kvbridge.spi.ErrorCode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
final class SideChannelServerTest
{
    private static final WireLimits LIMITS = WireLimits.DEFAULT;
    private static final MessageAuthenticator PLAIN = MessageAuthenticator.unauthenticated(LIMITS);

    private static SideChannelServer start(String engineId, List<RankMetadata> ranks, SideChannelSettings settings)
    {
        return SideChannelServer.start(engineId, ranks, settings, SideChannelClock.system());
    }

    private static byte[] envelope(byte[] content)
    {
        return PLAIN.seal(Direction.REQUEST, content, new byte[0]).content();
    }

    private static void assertServes(SideChannelServer server, RankMetadata expected)
    {
        SideChannelClient client = new SideChannelClient(SideChannelFixtures.fast().build(), SideChannelClock.system());
        List<SideChannelClient.Fetched> fetched = client.fetch(server.address(), List.of(RankKey.of(expected.rank())));
        HandshakeVerifier verifier = new HandshakeVerifier(expected.geometry().model(), CompatibilityMode.STRICT, LIMITS);
        assertEquals(expected, verifier.verify(fetched.getFirst().payload()).metadata());
    }

    @Test
    void servesEveryRankOnLoopbackAndNamesTheRanksItLacks()
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 2, 2);
        try (SideChannelServer server = start("prefill-0", ranks, SideChannelFixtures.fast().build())) {
            assertTrue(server.address().getAddress().isLoopbackAddress(), server.address().toString());
            SideChannelClient client = new SideChannelClient(SideChannelFixtures.fast().build(), SideChannelClock.system());
            List<RankKey> keys = ranks.stream().map(rank -> RankKey.of(rank.rank())).toList();
            List<SideChannelClient.Fetched> fetched = client.fetch(server.address(), keys);
            HandshakeVerifier verifier = new HandshakeVerifier(ranks.getFirst().geometry().model(), CompatibilityMode.STRICT, LIMITS);
            for (int i = 0; i < ranks.size(); i++) {
                assertEquals(keys.get(i), fetched.get(i).rank());
                assertEquals(ranks.get(i), verifier.verify(fetched.get(i).payload()).metadata());
            }
            assertEquals(4, server.requestsServed());
            assertError(ErrorCode.HANDSHAKE_FAILED, () -> client.fetch(server.address(), List.of(new RankKey(2, 0))),
                    "refused the request for rank pp2:tp0", "engine prefill-0 has no rank pp2:tp0 (it serves [pp0:tp0, pp0:tp1, pp1:tp0, pp1:tp1])");
            assertEquals(1, server.requestsRejected());
        }
    }

    @Test
    void keepsServingOthersWhileMalformedClientsAreRejected()
            throws IOException
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        try (SideChannelServer server = start("prefill-0", ranks, SideChannelFixtures.fast().build());
                RawConnection idle = new RawConnection(server.address())) {
            // one connection stays open, silent, the whole time: it must not block anyone
            Map<String, byte[]> malformed = Map.of(
                    "not msgpack", "GET /metadata HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII),
                    "envelope content not msgpack", envelope(new byte[] {(byte) 0xc1, 0x00}),
                    "wrong field types", envelope(new WireWriter().value(Map.of("type", "get_metadata", "pp_rank", "zero", "tp_rank", 0L)).toByteArray()),
                    "missing required field", envelope(new WireWriter().value(Map.of("type", "get_metadata", "pp_rank", 0L)).toByteArray()),
                    "unknown request type", envelope(new WireWriter().value(Map.of("type", "drop_tables", "pp_rank", 0L, "tp_rank", 0L)).toByteArray()),
                    "negative rank", envelope(new WireWriter().value(Map.of("type", "get_metadata", "pp_rank", -1L, "tp_rank", 0L)).toByteArray()),
                    "envelope is a list", new WireWriter().value(List.of(1L, 2L)).toByteArray());
            List<String> problems = new ArrayList<>();
            for (Map.Entry<String, byte[]> entry : malformed.entrySet()) {
                try (RawConnection connection = new RawConnection(server.address())) {
                    connection.sendFrame(entry.getValue());
                    String code = errorCode(connection.readFrame());
                    if (!ErrorCode.PROTOCOL_ERROR.id().equals(code) || !connection.closedByPeer()) {
                        problems.add(entry.getKey() + ": code=" + code);
                    }
                }
                assertServes(server, ranks.getFirst());
            }
            // a frame claiming 4 GiB, one claiming more than requests may be, and a truncated one
            for (byte[] raw : List.of(new byte[] {-1, -1, -1, -1, 1, 2, 3}, new byte[] {0, 2, 0, 0}, new byte[] {0, 0, 0, 50, 1, 2})) {
                try (RawConnection connection = new RawConnection(server.address())) {
                    connection.sendRaw(raw);
                    connection.shutdownOutput();
                    String code = errorCode(connection.readFrame());
                    if (!ErrorCode.PROTOCOL_ERROR.id().equals(code) || !connection.closedByPeer()) {
                        problems.add("raw " + raw.length + " bytes: code=" + code);
                    }
                }
                assertServes(server, ranks.getFirst());
            }
            assertEquals(List.of(), problems);
            assertEquals(malformed.size() + 3, server.requestsRejected());
            assertEquals(malformed.size() + 3, server.requestsServed());
        }
    }

    private static String errorCode(byte[] frame)
    {
        assertNotNull(frame, "the server closed the connection without an error reply");
        SideChannelMessages.Reply reply = SideChannelMessages.decodeReply(PLAIN.open(Direction.REPLY, frame, new byte[0]).content(), LIMITS);
        return reply.errorCode();
    }

    @Test
    void saysExactlyOnceThatItIsUnauthenticatedAtInfoOnLoopbackAndWarnsBeyond()
            throws Exception
    {
        Logger logger = (Logger) LoggerFactory.getLogger(SideChannelServer.class);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        try {
            List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
            try (SideChannelServer server = start("prefill-0", ranks, SideChannelFixtures.fast().build())) {
                assertServes(server, ranks.getFirst());
                assertServes(server, ranks.getFirst());
            }
            // only this host reaches a loopback side channel: worth knowing, not a warning
            assertEquals(1, unauthenticated(appender, Level.INFO));
            assertEquals(0, unauthenticated(appender, Level.WARN));
            byte[] secret = "a-shared-secret-of-32-bytes-long".getBytes(StandardCharsets.US_ASCII);
            try (SideChannelServer server = start("prefill-0", ranks, SideChannelFixtures.fast().secret(secret).build())) {
                assertTrue(server.address().getPort() > 0);
            }
            assertEquals(1, unauthenticated(appender, Level.INFO));
            try (SideChannelServer server = start("prefill-0", ranks, SideChannelFixtures.fast().bindAddress(java.net.InetAddress.getByName("0.0.0.0"))
                    .allowUnauthenticated(true).build())) {
                assertTrue(server.address().getPort() > 0);
            }
            assertEquals(1, unauthenticated(appender, Level.WARN));
        }
        finally {
            logger.detachAppender(appender);
        }
    }

    private static long unauthenticated(ListAppender<ILoggingEvent> appender, Level level)
    {
        return appender.list.stream()
                .filter(event -> event.getLevel() == level && event.getFormattedMessage().contains("is unauthenticated"))
                .count();
    }

    @Test
    void silentConnectionsDisplaceEachOtherAndCloseAfterTheFirstRequestTimeoutButNeverAnEstablishedOne()
            throws IOException, InterruptedException
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        SideChannelSettings settings = SideChannelFixtures.fast().firstRequestTimeout(Duration.ofMillis(400)).maxConnections(1)
                .maxPendingConnections(2).maxPendingPerAddress(2).build();
        try (SideChannelServer server = start("prefill-0", ranks, settings);
                RawConnection established = new RawConnection(server.address())) {
            established.sendFrame(envelope(SideChannelMessages.request(new RankKey(0, 0))));
            assertEquals("ok", status(established.readFrame()));
            waitFor(() -> server.establishedConnections() == 1);
            try (RawConnection first = new RawConnection(server.address());
                    RawConnection second = new RawConnection(server.address());
                    RawConnection third = new RawConnection(server.address())) {
                // two may wait for their first request: the third displaces the oldest, never the established one
                assertTrue(first.closedByPeer(), "the oldest silent connection stayed open");
                waitFor(() -> server.connectionsDisplaced() >= 1);
                long start = System.nanoTime();
                assertTrue(second.closedByPeer() && third.closedByPeer(), "silent connections stayed open past firstRequestTimeout");
                long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
                assertTrue(elapsedMillis < 3_000, "closed after " + elapsedMillis + " ms");
                waitFor(() -> server.connectionsDisplaced() == 3);
            }
            // the established connection was never displaced and is still served
            established.sendFrame(envelope(SideChannelMessages.request(new RankKey(0, 0))));
            assertEquals("ok", status(established.readFrame()));
            assertEquals(0, server.connectionsRefused());
        }
    }

    @Test
    void aNewlyEstablishedConnectionDisplacesTheOneIdleTheLongest()
            throws IOException, InterruptedException
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        SideChannelSettings settings = SideChannelFixtures.fast().maxConnections(1).build();
        try (SideChannelServer server = start("prefill-0", ranks, settings);
                RawConnection idle = new RawConnection(server.address())) {
            idle.sendFrame(envelope(SideChannelMessages.request(new RankKey(0, 0))));
            assertEquals("ok", status(idle.readFrame()));
            // the reply reaches the client before the server marks the connection idle again
            waitFor(() -> server.idleConnections() == 1);
            assertServes(server, ranks.getFirst());
            assertTrue(idle.closedByPeer(), "the idle established connection kept the only slot");
            assertEquals(1, server.connectionsDisplaced());
            assertEquals(0, server.connectionsRefused());
        }
    }

    private static String status(byte[] frame)
    {
        assertNotNull(frame, "the server closed the connection without a reply");
        return PLAIN.open(Direction.REPLY, frame, new byte[0]).content().length > 0
                ? SideChannelMessages.decodeReply(PLAIN.open(Direction.REPLY, frame, new byte[0]).content(), LIMITS).ok() ? "ok" : "error" : "empty";
    }

    @Test
    void closesAConnectionThatDripsItsRequest()
            throws IOException, InterruptedException
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        SideChannelSettings settings = SideChannelFixtures.fast().idleConnectionTimeout(Duration.ofMillis(500)).build();
        try (SideChannelServer server = start("prefill-0", ranks, settings);
                RawConnection connection = new RawConnection(server.address())) {
            // a 100-byte frame, one byte every 100 ms: every read succeeds, the request never completes in time
            connection.sendRaw(new byte[] {0, 0, 0, 100});
            long start = System.nanoTime();
            boolean dropped = false;
            for (int i = 0; i < 100 && !dropped; i++) {
                Thread.sleep(100);
                try {
                    connection.sendRaw(new byte[] {0});
                }
                catch (IOException e) {
                    dropped = true;
                }
            }
            long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(dropped, "the server kept a dripping connection for " + elapsedMillis + " ms");
            assertTrue(elapsedMillis >= 300 && elapsedMillis < 3_000, "dropped after " + elapsedMillis + " ms");
            assertServes(server, ranks.getFirst());
        }
    }

    private static void waitFor(java.util.function.BooleanSupplier condition)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "condition not met in time");
            Thread.sleep(20);
        }
    }

    @Test
    void refusesToServeInconsistentRanks()
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 2);
        SideChannelSettings settings = SideChannelFixtures.fast().build();
        assertError(ErrorCode.INVALID_ARGUMENT, () -> start("prefill-1", ranks, settings), "carries engineId=prefill-0 but the server serves engine prefill-1");
        assertError(ErrorCode.INVALID_ARGUMENT, () -> start("prefill-0", List.of(ranks.getFirst(), ranks.getFirst()), settings),
                "rank pp0:tp0 is given twice");
        assertError(ErrorCode.INVALID_ARGUMENT, () -> start("prefill-0", List.of(), settings), "serves no ranks");
        SideChannelSettings tight = SideChannelFixtures.fast().limits(new WireLimits(1 << 20, 3, 4096, 4096, 16)).build();
        assertError(ErrorCode.INVALID_ARGUMENT, () -> start("prefill-0", ranks, tight), "would be refused by peers", "exceeds maxListLength=3");
    }

    @Test
    void reportsAPortInUse()
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        try (SideChannelServer server = start("prefill-0", ranks, SideChannelFixtures.fast().build())) {
            int port = server.address().getPort();
            assertError(ErrorCode.CONFIG_INVALID, () -> start("prefill-0", ranks, SideChannelFixtures.fast().port(port).build()),
                    "cannot bind the side channel of engine prefill-0 to 127.0.0.1:" + port);
        }
    }

    @Test
    void servesTheSameMetadataToManyConcurrentClients()
            throws Exception
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        try (SideChannelServer server = start("prefill-0", ranks, SideChannelFixtures.fast().build())) {
            InetSocketAddress address = server.address();
            List<Thread> threads = new ArrayList<>();
            List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
            for (int i = 0; i < 16; i++) {
                threads.add(Thread.ofVirtual().start(() -> {
                    try {
                        assertServes(server, ranks.getFirst());
                    }
                    catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            for (Thread thread : threads) {
                thread.join();
            }
            assertEquals(List.of(), failures);
            assertEquals(16, server.requestsServed());
            assertTrue(address.getPort() > 0);
        }
    }
}
