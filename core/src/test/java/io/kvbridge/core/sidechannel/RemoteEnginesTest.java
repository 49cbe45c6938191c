package io.kvbridge.core.sidechannel;

import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.CompatibilityMode;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.PeerCapability;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.TestingGeometries;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
final class RemoteEnginesTest
{
    private static final Duration TTL = Duration.ofMinutes(10);
    private static final List<RankKey> FIRST_RANK = List.of(new RankKey(0, 0));

    private final ManualClock clock = new ManualClock();
    private final List<RemoteEngine> evicted = new ArrayList<>();
    private final List<AutoCloseable> resources = new ArrayList<>();

    /** Runs handshakes only when the test says so, to catch several callers in one handshake. */
    private static final class ManualExecutor
            implements Executor
    {
        final Queue<Runnable> tasks = new ArrayDeque<>();

        @Override
        public synchronized void execute(Runnable task)
        {
            tasks.add(task);
        }

        synchronized Runnable next()
        {
            return tasks.remove();
        }
    }

    @AfterEach
    void closeResources()
            throws Exception
    {
        for (AutoCloseable resource : resources) {
            resource.close();
        }
    }

    private SideChannelServer server(String engineId, List<RankMetadata> ranks)
    {
        SideChannelServer server = SideChannelServer.start(engineId, ranks, SideChannelFixtures.fast().build(), SideChannelClock.system());
        resources.add(server);
        return server;
    }

    private RemoteEngines engines(Executor executor, CompatibilityMode mode, Set<PeerCapability> capabilities, SideChannelSettings.Builder settings)
    {
        ModelIdentity local = TestingGeometries.identity(SideChannelFixtures.LAYERS);
        SideChannelClient client = new SideChannelClient(settings.build(), SideChannelClock.system());
        return new RemoteEngines(client, new HandshakeVerifier(local, mode, settings.build().limits()), capabilities, TTL, clock, executor,
                evicted::add);
    }

    private RemoteEngines engines(Executor executor)
    {
        return engines(executor, CompatibilityMode.STRICT, EnumSet.of(PeerCapability.PULL, PeerCapability.PACKED_MLA), SideChannelFixtures.fast());
    }

    private Executor virtualThreads()
    {
        var executor = Executors.newVirtualThreadPerTaskExecutor();
        resources.add(executor::shutdownNow);
        return executor;
    }

    private static KvBridgeException failure(CompletableFuture<?> future)
    {
        CompletionException e = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class, future::join);
        if (e.getCause() instanceof KvBridgeException cause) {
            return cause;
        }
        throw new AssertionError("failed with " + e.getCause(), e.getCause());
    }

    @Test
    void shakesHandsWithEveryRankAskedFor()
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 2, 2);
        SideChannelServer server = server("prefill-0", ranks);
        List<RankKey> keys = List.of(new RankKey(0, 0), new RankKey(1, 1));
        RemoteEngine engine = engines(virtualThreads()).handshake("prefill-0", server.address(), keys).join();
        assertEquals("prefill-0", engine.engineId());
        assertEquals(server.address(), engine.address());
        assertEquals(Set.copyOf(keys), engine.ranks().keySet());
        assertEquals(ranks.get(0), engine.metadata(new RankKey(0, 0)));
        assertEquals(ranks.get(3), engine.metadata(new RankKey(1, 1)));
        assertEquals(ranks.get(3).geometry(), engine.geometry(new RankKey(1, 1)).geometry());
        // the producer advertises push and pull, this engine pull and packed MLA: they share pull
        assertEquals(Set.of(PeerCapability.PULL), engine.capabilities());
        assertTrue(engine.clockOffset().roundTripNanos() > 0);
        assertError(ErrorCode.PEER_UNKNOWN, () -> engine.metadata(new RankKey(0, 1)), "rank pp0:tp1 of engine prefill-0 was not fetched");
    }

    @Test
    void anEngineTheLocatorFoundElsewhereIsKeptUnderTheAddressAskedAtAndNamesWhereItServes()
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        SideChannelServer server = server("prefill-0", ranks);
        // the parameters' address leads nowhere; only the locator knows the side channel
        InetSocketAddress asked = new InetSocketAddress("127.0.0.1", 1);
        ModelIdentity local = TestingGeometries.identity(SideChannelFixtures.LAYERS);
        SideChannelSettings settings = SideChannelFixtures.fast().build();
        RemoteEngines engines = new RemoteEngines(new SideChannelClient(settings, SideChannelClock.system()),
                new HandshakeVerifier(local, CompatibilityMode.STRICT, settings.limits()), EnumSet.of(PeerCapability.PULL), TTL, clock, virtualThreads(),
                evicted::add, null, (engineId, wanted, given) -> Optional.of(server.address()));
        RemoteEngine engine = engines.handshake("prefill-0", asked, List.of(new RankKey(0, 0))).join();
        assertEquals(asked, engine.address());
        assertEquals(server.address(), engine.servedAt());
        RemoteEngine direct = engines(virtualThreads()).handshake("prefill-0", server.address(), List.of(new RankKey(0, 0))).join();
        assertEquals(direct.address(), direct.servedAt());
    }

    @Test
    void aLocatedAddressWhereTheHandshakeFailsFallsBackToTheAddressGivenAndIsReported()
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        SideChannelServer server = server("prefill-0", ranks);
        // a stale entry: nothing listens where it says the engine serves
        InetSocketAddress dead = new InetSocketAddress("127.0.0.1", 1);
        List<String> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        EngineLocator stale = new EngineLocator()
        {
            @Override
            public Optional<InetSocketAddress> locate(String engineId, java.util.Collection<RankKey> wanted, InetSocketAddress given)
            {
                return Optional.of(dead);
            }

            @Override
            public void failed(String engineId, InetSocketAddress located, String reason)
            {
                failures.add(engineId + " " + located + " " + reason);
            }
        };
        ModelIdentity local = TestingGeometries.identity(SideChannelFixtures.LAYERS);
        SideChannelSettings settings = SideChannelFixtures.fast().build();
        RemoteEngines engines = new RemoteEngines(new SideChannelClient(settings, SideChannelClock.system()),
                new HandshakeVerifier(local, CompatibilityMode.STRICT, settings.limits()), EnumSet.of(PeerCapability.PULL), TTL, clock, virtualThreads(),
                evicted::add, null, stale);
        RemoteEngine engine = engines.handshake("prefill-0", server.address(), List.of(new RankKey(0, 0))).join();
        assertEquals(server.address(), engine.servedAt(), "the handshake went to the address given");
        assertEquals(1, failures.size(), failures.toString());
        assertTrue(failures.getFirst().startsWith("prefill-0 " + dead), failures.toString());
    }

    @Test
    void aLocatedSideChannelThatProvesItselfAndAnswersAnotherEpochIsTheRestartedEngineNotAForgedHint()
    {
        byte[] secret = "a secret both engines were given, 32+".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        SideChannelServer restarted = SideChannelServer.start("prefill-0", ranks, SideChannelFixtures.fast().secret(secret).build(), SideChannelClock.system());
        resources.add(restarted);
        // the parameters name an address nobody serves any more (the old process's), and the old epoch
        InetSocketAddress old = new InetSocketAddress("127.0.0.1", 1);
        long oldEpoch = TestingGeometries.EPOCH + 1;
        List<String> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        EngineLocator directory = new EngineLocator()
        {
            @Override
            public Optional<InetSocketAddress> locate(String engineId, java.util.Collection<RankKey> wanted, InetSocketAddress given)
            {
                return Optional.of(restarted.address());
            }

            @Override
            public void failed(String engineId, InetSocketAddress located, String reason)
            {
                failures.add(reason);
            }
        };
        ModelIdentity local = TestingGeometries.identity(SideChannelFixtures.LAYERS);
        for (boolean proven : new boolean[] {true, false}) {
            SideChannelSettings settings = (proven ? SideChannelFixtures.fast().secret(secret) : SideChannelFixtures.fast()).build();
            RemoteEngines engines = new RemoteEngines(new SideChannelClient(settings, SideChannelClock.system()),
                    new HandshakeVerifier(local, CompatibilityMode.STRICT, settings.limits()), EnumSet.of(PeerCapability.PULL), TTL, clock,
                    virtualThreads(), evicted::add, null, directory);
            if (proven) {
                // the authenticated answer is the engine: its new epoch goes to the caller, who reports the request's epoch stale
                RemoteEngine engine = engines.handshake("k", "prefill-0", old, List.of(new RankKey(0, 0)), oldEpoch).join();
                assertEquals(restarted.address(), engine.servedAt());
                assertEquals(TestingGeometries.EPOCH, engine.epoch());
                assertEquals(List.of(), failures);
            }
            else {
                // unproven, it may be a forged entry's: the router's address decides, and nothing serves there
                assertThrows(java.util.concurrent.CompletionException.class,
                        () -> engines.handshake("k", "prefill-0", old, List.of(new RankKey(0, 0)), oldEpoch).join());
            }
        }
    }

    private static void republish(SideChannelServer server, List<RankMetadata> ranks, long epoch)
    {
        // the side channel now serves another incarnation of the same ranks, as a restart on the same port would
        for (RankMetadata rank : ranks) {
            server.publish(new RankMetadata(rank.engineId(), epoch, rank.transport(), rank.transportMetadata(), rank.capabilities(), rank.geometry()));
        }
    }

    @Test
    void anotherEpochOrAFailedPeerHasTheSideChannelAskedAgainAndTheOldEngineDropped()
    {
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 2);
        SideChannelServer server = server("prefill-0", ranks);
        RemoteEngines engines = engines(virtualThreads());
        long first = TestingGeometries.EPOCH;
        RemoteEngine cached = engines.handshake("k", "prefill-0", server.address(), FIRST_RANK, first).join();
        assertEquals(first, cached.epoch());
        assertTrue(engines.answersFromCache("k", FIRST_RANK, first));
        assertFalse(engines.answersFromCache("k", FIRST_RANK, first + 1), "a cached engine answers for its own epoch only");

        republish(server, ranks, 0x2222L);
        // the cache is trusted while the epoch asked for is the cached one
        assertSame(cached, engines.handshake("k", "prefill-0", server.address(), FIRST_RANK, first).join());
        // a rank not cached yet is fetched, finds the new epoch, and every rank comes from the new incarnation
        List<RankKey> both = List.of(new RankKey(0, 0), new RankKey(0, 1));
        RemoteEngine restarted = engines.handshake("k", "prefill-0", server.address(), both, first).join();
        assertEquals(0x2222L, restarted.epoch());
        assertEquals(Set.copyOf(both), restarted.ranks().keySet());
        assertEquals(0x2222L, restarted.metadata(new RankKey(0, 0)).epoch());
        assertEquals(List.of(cached), evicted, "the earlier incarnation went to the eviction listener");

        // parameters naming the earlier epoch are not answered from the cache; the answer carries the epoch now served
        assertEquals(0x2222L, engines.handshake("k", "prefill-0", server.address(), FIRST_RANK, first).join().epoch());
        assertEquals(1, evicted.size(), "the same epoch again is no restart");

        republish(server, ranks, 0x3333L);
        assertTrue(engines.answersFromCache("k", FIRST_RANK, 0x2222L));
        engines.revalidate("k");
        assertFalse(engines.answersFromCache("k", FIRST_RANK, 0x2222L), "a failed peer has the side channel asked again");
        assertEquals(0x3333L, engines.handshake("k", "prefill-0", server.address(), FIRST_RANK, RankMetadata.UNKNOWN_EPOCH).join().epoch());
        assertEquals(2, evicted.size());
        assertTrue(engines.answersFromCache("k", both, 0x3333L), "revalidated once, cached again");
    }

    @Test
    void callersJoinTheHandshakeInFlight()
    {
        SideChannelServer server = server("prefill-0", SideChannelFixtures.engine("prefill-0", 1, 1));
        ManualExecutor executor = new ManualExecutor();
        RemoteEngines engines = engines(executor);
        List<CompletableFuture<RemoteEngine>> futures = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            futures.add(engines.handshake("prefill-0", server.address(), FIRST_RANK));
        }
        assertEquals(1, executor.tasks.size());
        assertFalse(futures.getFirst().isDone());
        executor.next().run();
        RemoteEngine engine = futures.getFirst().join();
        for (CompletableFuture<RemoteEngine> future : futures) {
            assertSame(engine, future.join());
        }
        assertEquals(1, server.requestsServed());
        // cached from now on: no further handshake runs
        assertSame(engine, engines.handshake("prefill-0", server.address(), FIRST_RANK).join());
        assertEquals(0, executor.tasks.size());
        assertEquals(1, server.requestsServed());
    }

    @Test
    void fetchesOnlyTheRanksNotYetKnown()
    {
        SideChannelServer server = server("prefill-0", SideChannelFixtures.engine("prefill-0", 1, 2));
        RemoteEngines engines = engines(virtualThreads());
        engines.handshake("prefill-0", server.address(), FIRST_RANK).join();
        RemoteEngine both = engines.handshake("prefill-0", server.address(), List.of(new RankKey(0, 0), new RankKey(0, 1))).join();
        assertEquals(Set.of(new RankKey(0, 0), new RankKey(0, 1)), both.ranks().keySet());
        assertEquals(2, server.requestsServed());
    }

    @Test
    void aCallerNeedingOtherRanksWaitsForTheRunningHandshakeThenFetchesTheRest()
    {
        SideChannelServer server = server("prefill-0", SideChannelFixtures.engine("prefill-0", 1, 2));
        ManualExecutor executor = new ManualExecutor();
        RemoteEngines engines = engines(executor);
        CompletableFuture<RemoteEngine> first = engines.handshake("prefill-0", server.address(), FIRST_RANK);
        CompletableFuture<RemoteEngine> second = engines.handshake("prefill-0", server.address(), List.of(new RankKey(0, 1)));
        assertEquals(1, executor.tasks.size());
        executor.next().run();
        first.join();
        assertEquals(1, executor.tasks.size());
        executor.next().run();
        assertEquals(Set.of(new RankKey(0, 0), new RankKey(0, 1)), second.join().ranks().keySet());
        assertEquals(2, server.requestsServed());
    }

    @Test
    void rejectsAReplyFromAnotherEngine()
    {
        SideChannelServer server = server("prefill-b", SideChannelFixtures.engine("prefill-b", 1, 1));
        RemoteEngines engines = engines(virtualThreads());
        KvBridgeException e = failure(engines.handshake("prefill-a", server.address(), FIRST_RANK));
        assertEquals(ErrorCode.HANDSHAKE_FAILED, e.code());
        assertTrue(e.getMessage().contains("handshake with engine prefill-a at " + server.address() + " failed: engine id mismatch: asked for engine"
                + " prefill-a, the side channel serves engine prefill-b"), e.getMessage());
        assertTrue(engines.cached("prefill-a").isEmpty());
    }

    @Test
    void failsByItsDeadlineWhenThePeerNeverAnswersAndCanBeRetried()
            throws IOException
    {
        try (TestingPeer peer = TestingPeer.silent()) {
            ManualExecutor executor = new ManualExecutor();
            RemoteEngines engines = engines(executor, CompatibilityMode.STRICT, EnumSet.of(PeerCapability.PULL),
                    SideChannelFixtures.fast().readTimeout(Duration.ofMillis(200)));
            CompletableFuture<RemoteEngine> future = engines.handshake("prefill-0", peer.address(), FIRST_RANK);
            long start = System.nanoTime();
            executor.next().run();
            KvBridgeException e = failure(future);
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(3));
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, e.code());
            assertTrue(e.getMessage().contains("handshake with engine prefill-0 at " + peer.address() + " failed: no reply from the side channel"),
                    e.getMessage());
            // nothing is cached after a failure: the next caller starts a new handshake
            assertTrue(engines.cached("prefill-0").isEmpty());
            engines.handshake("prefill-0", peer.address(), FIRST_RANK);
            assertEquals(1, executor.tasks.size());
        }
    }

    @Test
    void refusesAKnownEngineAtAnotherAddress()
    {
        SideChannelServer server = server("prefill-0", SideChannelFixtures.engine("prefill-0", 1, 1));
        RemoteEngines engines = engines(virtualThreads());
        engines.handshake("prefill-0", server.address(), FIRST_RANK).join();
        InetSocketAddress elsewhere = new InetSocketAddress(server.address().getAddress(), server.address().getPort() == 1 ? 2 : 1);
        KvBridgeException e = failure(engines.handshake("prefill-0", elsewhere, FIRST_RANK));
        assertEquals(ErrorCode.HANDSHAKE_FAILED, e.code());
        assertTrue(e.getMessage().contains("engine prefill-0 is known at " + server.address()), e.getMessage());
    }

    @Test
    void evictsIdleEnginesButNeverOnesInUse()
    {
        SideChannelServer server = server("prefill-0", SideChannelFixtures.engine("prefill-0", 1, 1));
        RemoteEngines engines = engines(virtualThreads());
        RemoteEngine engine = engines.handshake("prefill-0", server.address(), FIRST_RANK).join();

        clock.advance(TTL.minusSeconds(1));
        assertEquals(List.of(), engines.evictIdle());
        RemoteEngines.InFlight transfer = engines.markInFlight("prefill-0");
        RemoteEngines.InFlight another = engines.markInFlight("prefill-0");
        clock.advance(TTL.multipliedBy(3));
        assertEquals(List.of(), engines.evictIdle());
        transfer.close();
        clock.advance(TTL.multipliedBy(3));
        assertEquals(List.of(), engines.evictIdle(), "evicted while a second mark was still held");
        another.close();
        another.close();
        // releasing the last mark counts as activity: the engine lives one more TTL
        clock.advance(TTL);
        assertEquals(List.of(), engines.evictIdle());
        engines.touch("prefill-0");
        clock.advance(TTL);
        assertEquals(List.of(), engines.evictIdle());
        clock.advance(Duration.ofNanos(1));
        assertEquals(List.of(engine), engines.evictIdle());
        assertEquals(List.of(engine), evicted);
        assertTrue(engines.cached("prefill-0").isEmpty());
        assertError(ErrorCode.PEER_UNKNOWN, () -> engines.markInFlight("prefill-0"), "engine prefill-0 is not known (or was evicted)");
    }

    @Test
    void evictsIdleEnginesBeforeEachNewHandshake()
    {
        SideChannelServer first = server("prefill-0", SideChannelFixtures.engine("prefill-0", 1, 1));
        SideChannelServer second = server("prefill-1", SideChannelFixtures.engine("prefill-1", 1, 1));
        RemoteEngines engines = engines(virtualThreads());
        engines.handshake("prefill-0", first.address(), FIRST_RANK).join();
        clock.advance(TTL.plusSeconds(1));
        engines.handshake("prefill-1", second.address(), FIRST_RANK).join();
        assertEquals(List.of("prefill-0"), evicted.stream().map(RemoteEngine::engineId).toList());
        assertTrue(engines.cached("prefill-1").isPresent());
    }

    @Test
    void strictModeRejectsAnotherModelAndLenientModeAcceptsIt()
    {
        RankMetadata renamed = TestingGeometries.metadata("prefill-0", withModel(new ModelIdentity("test-org/renamed", "bfloat16", "bfloat16", 8, 128,
                SideChannelFixtures.LAYERS, false)));
        SideChannelServer server = server("prefill-0", List.of(renamed));
        KvBridgeException e = failure(engines(virtualThreads()).handshake("prefill-0", server.address(), FIRST_RANK));
        assertEquals(ErrorCode.COMPATIBILITY_MISMATCH, e.code());
        assertTrue(e.getMessage().contains("compatibility hash mismatch"), e.getMessage());

        RemoteEngines lenient = engines(virtualThreads(), CompatibilityMode.LENIENT, EnumSet.of(PeerCapability.PUSH), SideChannelFixtures.fast());
        RemoteEngine engine = lenient.handshake("prefill-0", server.address(), FIRST_RANK).join();
        assertEquals("test-org/renamed", engine.metadata(new RankKey(0, 0)).geometry().model().model());
        assertEquals(Set.of(PeerCapability.PUSH), engine.capabilities());
    }

    @Test
    void failsWithoutACommonTransferMode()
    {
        RankMetadata pullOnly = new RankMetadata("prefill-0", TestingGeometries.EPOCH, "ucx", new byte[] {1}, EnumSet.of(PeerCapability.PULL),
                TestingGeometries.perLayer(SideChannelFixtures.LAYERS, Rank.single()));
        SideChannelServer server = server("prefill-0", List.of(pullOnly));
        RemoteEngines pushOnly = engines(virtualThreads(), CompatibilityMode.STRICT, EnumSet.of(PeerCapability.PUSH), SideChannelFixtures.fast());
        KvBridgeException e = failure(pushOnly.handshake("prefill-0", server.address(), FIRST_RANK));
        assertEquals(ErrorCode.HANDSHAKE_FAILED, e.code());
        assertTrue(e.getMessage().contains("no common transfer mode with engine prefill-0: local=[push] remote=[pull]"), e.getMessage());
    }

    private static io.kvbridge.spi.geometry.CacheGeometry withModel(ModelIdentity model)
    {
        var geometry = TestingGeometries.perLayer(SideChannelFixtures.LAYERS, Rank.single());
        return new io.kvbridge.spi.geometry.CacheGeometry(geometry.layoutName(), geometry.rank(), model, geometry.blockTokens(),
                geometry.kernelBlocksPerLogical(), geometry.groups(), geometry.allocations(), geometry.regions());
    }
}
