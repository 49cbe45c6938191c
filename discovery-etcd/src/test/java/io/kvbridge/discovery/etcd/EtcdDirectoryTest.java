package io.kvbridge.discovery.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.discovery.DirectoryConfig;
import io.kvbridge.spi.discovery.DirectoryEntry;
import io.kvbridge.spi.discovery.DirectoryHealth;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.discovery.DirectoryFactory;
import io.kvbridge.spi.discovery.EngineDirectory;
import io.kvbridge.testkit.EtcdServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** The etcd directory against a real etcd server started for the class. */
class EtcdDirectoryTest
{
    private static final Duration TTL = Duration.ofSeconds(1);
    // the first call of a fresh client sets up its connection and loads the gRPC stack: on two busy cores, more than a second
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(3);

    @TempDir
    static Path work;
    static EtcdServer etcd;

    @BeforeAll
    static void startEtcd()
    {
        // without etcd each test skips with the reason (below): skipped in here, the class would vanish from the report
        if (Files.isExecutable(EtcdServer.binary())) {
            etcd = EtcdServer.start(work);
        }
    }

    @BeforeEach
    void requireEtcd()
    {
        EtcdServer.assumeInstalled();
    }

    @AfterAll
    static void stopEtcd()
    {
        if (etcd != null) {
            etcd.close();
        }
    }

    private static EngineDirectory open()
    {
        return new EtcdDirectoryFactory().open(DirectoryConfig.parse(etcd.location()).with(TTL, REQUEST_TIMEOUT, 64 << 10));
    }

    private static DirectoryEntry entry(String engineId, int pp, int tp, String value)
    {
        return new DirectoryEntry(engineId, pp, tp, value.getBytes(UTF_8));
    }

    @Test
    void publishedEntriesResolveInRankOrderAndVanishWhenWithdrawn()
    {
        try (EngineDirectory producer = open(); EngineDirectory consumer = open()) {
            EngineDirectory.Publication second = producer.publish(entry("publish-1", 1, 0, "stage one"));
            producer.publish(entry("publish-1", 0, 1, "rank one"));
            producer.publish(entry("publish-1", 0, 0, "rank zero"));
            // an engine whose id extends this one's is not among its entries
            producer.publish(entry("publish-10", 0, 0, "another engine"));
            assertEquals(List.of(entry("publish-1", 0, 0, "rank zero"), entry("publish-1", 0, 1, "rank one"), entry("publish-1", 1, 0, "stage one")),
                    consumer.resolve("publish-1"));
            second.close();
            assertEquals(List.of(entry("publish-1", 0, 0, "rank zero"), entry("publish-1", 0, 1, "rank one")), consumer.resolve("publish-1"));
            assertEquals(List.of(), consumer.resolve("nobody"));
            assertEquals(2 + 1, producer.health().published());
            assertTrue(consumer.health().reachable(), consumer.health().describe());
        }
        try (EngineDirectory consumer = open()) {
            // closing the producer's directory revoked its lease: every entry went with it
            assertEquals(List.of(), consumer.resolve("publish-1"));
        }
    }

    @Test
    void watchSeesEveryChange()
            throws InterruptedException
    {
        try (EngineDirectory producer = open(); EngineDirectory consumer = open()) {
            LinkedBlockingQueue<List<DirectoryEntry>> seen = new LinkedBlockingQueue<>();
            EngineDirectory.Subscription watch = consumer.watch("watched-1", seen::add);
            assertEquals(List.of(), seen.poll(5, TimeUnit.SECONDS), "the watch starts with the entries as they are");
            EngineDirectory.Publication first = producer.publish(entry("watched-1", 0, 0, "first"));
            assertEquals(List.of(entry("watched-1", 0, 0, "first")), seen.poll(5, TimeUnit.SECONDS));
            EngineDirectory.Publication publication = producer.publish(entry("watched-1", 0, 0, "second"));
            assertEquals(List.of(entry("watched-1", 0, 0, "second")), seen.poll(5, TimeUnit.SECONDS));
            // the watched cache answers without asking etcd
            assertEquals(List.of(entry("watched-1", 0, 0, "second")), consumer.resolve("watched-1"));
            // the replaced publication no longer owns the key: closing it leaves the newer entry
            first.close();
            assertEquals(List.of(entry("watched-1", 0, 0, "second")), consumer.resolve("watched-1"));
            publication.close();
            assertEquals(List.of(), seen.poll(5, TimeUnit.SECONDS));
            watch.close();
            producer.publish(entry("watched-1", 0, 0, "after the watch"));
            assertEquals(null, seen.poll(300, TimeUnit.MILLISECONDS), "a closed watch calls nobody");
        }
    }

    @Test
    void aKilledPublishersEntriesVanishWhenItsLeaseExpires()
            throws IOException, InterruptedException
    {
        // a real publisher process, killed with SIGKILL: nothing withdraws its entry but the lease
        Process publisher = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                System.getProperty("java.class.path"), Publisher.class.getName(), etcd.location(), "killed-1").redirectErrorStream(true).start();
        try (EngineDirectory consumer = open()) {
            LinkedBlockingQueue<List<DirectoryEntry>> seen = new LinkedBlockingQueue<>();
            consumer.watch("killed-1", seen::add);
            List<DirectoryEntry> entries = seen.poll(30, TimeUnit.SECONDS);
            while (entries != null && entries.isEmpty()) {
                entries = seen.poll(30, TimeUnit.SECONDS);
            }
            assertEquals(List.of(entry("killed-1", 0, 0, "alive")), entries, "the publisher published");
            // the publisher keeps its lease alive for longer than the TTL
            Thread.sleep(2 * TTL.toMillis());
            assertEquals(List.of(entry("killed-1", 0, 0, "alive")), consumer.resolve("killed-1"));
            long killed = System.nanoTime();
            publisher.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            assertEquals(List.of(), seen.poll(10, TimeUnit.SECONDS));
            long detectedMillis = (System.nanoTime() - killed) / 1_000_000;
            System.out.printf("killed publisher's entry vanished %d ms after SIGKILL (leaseTtl=%s)%n", detectedMillis, TTL);
            assertEquals(List.of(), consumer.resolve("killed-1"));
            // etcd keeps a lease at least its TTL and checks expiry every 500 ms
            assertTrue(detectedMillis < TTL.toMillis() + 3_000, "vanished after " + detectedMillis + " ms");
        }
        finally {
            publisher.destroyForcibly();
        }
    }

    /** Publishes one entry and keeps it alive until killed. */
    public static final class Publisher
    {
        private Publisher()
        {
        }

        /**
         * Runs the publisher.
         *
         * @param args the etcd location and the engine id.
         * @throws InterruptedException never: it sleeps until killed.
         */
        public static void main(String[] args)
                throws InterruptedException
        {
            EngineDirectory directory = new EtcdDirectoryFactory().open(DirectoryConfig.parse(args[0]).with(TTL, REQUEST_TIMEOUT, 64 << 10));
            directory.publish(entry(args[1], 0, 0, "alive"));
            Thread.sleep(Long.MAX_VALUE);
        }
    }

    @Test
    void anOutageIsAnsweredFromTheCacheAndRecoveredFrom()
            throws InterruptedException
    {
        try (EngineDirectory producer = open(); EngineDirectory consumer = open()) {
            producer.publish(entry("outage-1", 0, 0, "before"));
            EngineDirectory.Publication withdrawnInTheOutage = producer.publish(entry("outage-1", 1, 0, "withdrawn while etcd is down"));
            LinkedBlockingQueue<List<DirectoryEntry>> seen = new LinkedBlockingQueue<>();
            consumer.watch("outage-1", seen::add);
            assertEquals(List.of(entry("outage-1", 0, 0, "before"), entry("outage-1", 1, 0, "withdrawn while etcd is down")),
                    seen.poll(5, TimeUnit.SECONDS));
            etcd.stop();
            long stopped = System.nanoTime();
            try {
                await(() -> !consumer.health().reachable(), Duration.ofSeconds(10));
                System.out.printf("etcd stopped: the consumer's health said unreachable after %d ms%n", (System.nanoTime() - stopped) / 1_000_000);
                DirectoryHealth health = consumer.health();
                assertTrue(health.describe().contains("unreachable since " + health.unreachableSince().orElseThrow()), health.describe());
                // cached entries are served meanwhile, by a watched engine's cache and by an earlier read
                assertEquals(List.of(entry("outage-1", 0, 0, "before"), entry("outage-1", 1, 0, "withdrawn while etcd is down")),
                        consumer.resolve("outage-1"));
                await(() -> !producer.health().reachable(), Duration.ofSeconds(10));
                // the lease stays alive for the other entry: this one must still be deleted once etcd answers
                withdrawnInTheOutage.close();
                // an engine never read cannot be answered: a typed error, at once while etcd is known to be down
                long asked = System.nanoTime();
                KvBridgeException unknown = assertThrows(KvBridgeException.class, () -> consumer.resolve("never-read"));
                long answeredMillis = (System.nanoTime() - asked) / 1_000_000;
                assertEquals(ErrorCode.DISCOVERY_UNAVAILABLE, unknown.code());
                assertTrue(unknown.getMessage().contains(etcd.endpoint()) && unknown.getMessage().contains("nothing is cached for engine never-read"),
                        unknown.getMessage());
                assertTrue(answeredMillis < REQUEST_TIMEOUT.toMillis(), "answered after " + answeredMillis + " ms");
            }
            finally {
                etcd.start();
            }
            long restarted = System.nanoTime();
            await(() -> consumer.health().reachable() && producer.health().reachable(), Duration.ofSeconds(15));
            System.out.printf("etcd restarted: both directories reachable again after %d ms%n", (System.nanoTime() - restarted) / 1_000_000);
            // the producer's lease survived (or was granted anew) and the consumer's watch follows changes again
            producer.publish(entry("outage-1", 0, 0, "after"));
            List<DirectoryEntry> entries = seen.poll(10, TimeUnit.SECONDS);
            while (entries != null && !entries.equals(List.of(entry("outage-1", 0, 0, "after")))) {
                entries = seen.poll(10, TimeUnit.SECONDS);
            }
            assertEquals(List.of(entry("outage-1", 0, 0, "after")), entries);
            assertEquals(List.of(entry("outage-1", 0, 0, "after")), consumer.resolve("outage-1"));
        }
    }

    @Test
    void slowFirstAnswersThatArriveWithinTheStartupGraceLeaveNoWarning()
            throws IOException, InterruptedException
    {
        Logger calls = (Logger) LoggerFactory.getLogger(EtcdCalls.class);
        Logger directory = (Logger) LoggerFactory.getLogger(EtcdDirectory.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        calls.addAppender(lines);
        directory.addAppender(lines);
        // etcd's answers held back past the first call's deadline, as a cold client on a loaded host sees them
        Duration requestTimeout = Duration.ofSeconds(1);
        String[] endpoint = etcd.endpoint().split(":");
        try (DelayingProxy proxy = new DelayingProxy(new InetSocketAddress(endpoint[0], Integer.parseInt(endpoint[1])), 2 * requestTimeout.toMillis() + 500);
                EngineDirectory producer = new EtcdDirectoryFactory().open(DirectoryConfig.parse("etcd://" + proxy.endpoint()).with(TTL, requestTimeout, 64 << 10));
                EngineDirectory consumer = open()) {
            long asked = System.nanoTime();
            producer.publish(entry("slow-start", 0, 0, "published late"));
            assertTrue(System.nanoTime() - asked >= requestTimeout.toNanos() / 2, "the first call was not held up: the proxy did not delay it");
            assertTrue(!producer.health().reachable(), "health says unreachable until etcd answers: " + producer.health().describe());
            await(() -> producer.health().reachable(), Duration.ofSeconds(15));
            await(() -> consumer.resolve("slow-start").equals(List.of(entry("slow-start", 0, 0, "published late"))), Duration.ofSeconds(10));
            List<String> warnings = lines.list.stream().filter(line -> line.getLevel().isGreaterOrEqual(Level.WARN)).map(ILoggingEvent::getFormattedMessage)
                    .toList();
            assertEquals(List.of(), warnings, "a start-up that etcd answered within the grace");
        }
        finally {
            calls.detachAppender(lines);
            directory.detachAppender(lines);
        }
    }

    @Test
    void malformedAndOversizedValuesAreRefusedWithATypedError()
            throws Exception
    {
        try (Client raw = Client.builder().endpoints("http://" + etcd.endpoint()).build(); EngineDirectory directory = open()) {
            KvBridgeException tooLarge = assertThrows(KvBridgeException.class, () -> directory.publish(new DirectoryEntry("big-1", 0, 0,
                    new byte[(64 << 10) + 1])));
            assertEquals(ErrorCode.PROTOCOL_ERROR, tooLarge.code());
            assertTrue(tooLarge.getMessage().contains("maxEntryBytes=65536"), tooLarge.getMessage());

            raw.getKVClient().put(key("/kvbridge/engines/big-2/0/0"), ByteSequence.from(new byte[(64 << 10) + 1])).get(5, TimeUnit.SECONDS);
            KvBridgeException oversized = assertThrows(KvBridgeException.class, () -> directory.resolve("big-2"));
            assertEquals(ErrorCode.PROTOCOL_ERROR, oversized.code());
            assertTrue(oversized.getMessage().contains("/kvbridge/engines/big-2/0/0 holds 65537 bytes"), oversized.getMessage());

            raw.getKVClient().put(key("/kvbridge/engines/bad-1/zero/0"), ByteSequence.from("x", UTF_8)).get(5, TimeUnit.SECONDS);
            KvBridgeException malformed = assertThrows(KvBridgeException.class, () -> directory.resolve("bad-1"));
            assertEquals(ErrorCode.PROTOCOL_ERROR, malformed.code());
            assertTrue(malformed.getMessage().contains("ppRank=zero is not a decimal number"), malformed.getMessage());

            raw.getKVClient().put(key("/kvbridge/engines/bad-2/0/0/extra"), ByteSequence.from("x", UTF_8)).get(5, TimeUnit.SECONDS);
            assertEquals(ErrorCode.PROTOCOL_ERROR, assertThrows(KvBridgeException.class, () -> directory.resolve("bad-2")).code());

            // a watch drops what it cannot accept rather than hand it on
            LinkedBlockingQueue<List<DirectoryEntry>> seen = new LinkedBlockingQueue<>();
            directory.watch("bad-3", seen::add);
            assertEquals(List.of(), seen.poll(5, TimeUnit.SECONDS));
            raw.getKVClient().put(key("/kvbridge/engines/bad-3/0/0"), ByteSequence.from(new byte[(64 << 10) + 1])).get(5, TimeUnit.SECONDS);
            assertEquals(List.of(), seen.poll(5, TimeUnit.SECONDS));
            assertEquals(List.of(), directory.resolve("bad-3"));
        }
    }

    @Test
    void locationsAreValidatedWithTheValueAndTheFix()
    {
        KvBridgeException noPort = assertThrows(KvBridgeException.class, () -> DirectoryConfig.parse("etcd://127.0.0.1"));
        assertEquals(ErrorCode.CONFIG_INVALID, noPort.code());
        assertTrue(noPort.getMessage().contains("discovery=etcd://127.0.0.1 is malformed: endpoint '127.0.0.1' is not host:port"), noPort.getMessage());
        assertEquals(ErrorCode.CONFIG_INVALID, assertThrows(KvBridgeException.class, () -> DirectoryConfig.parse("127.0.0.1:2379")).code());
        assertEquals(ErrorCode.CONFIG_INVALID, assertThrows(KvBridgeException.class, () -> DirectoryConfig.parse("etcd://a:1,b:99999")).code());
        assertEquals("etcd://a:1,[::1]:2379", DirectoryConfig.parse("etcd://a:1, [::1]:2379/").location());
        assertTrue(DirectoryConfig.parse("etcd://a:1").endpoints().getFirst().isUnresolved(), "parsing resolves no host");
    }

    @Test
    void theServiceFileNamesTheFactoryBuiltForThisSpi()
    {
        List<DirectoryFactory> found = java.util.ServiceLoader.load(DirectoryFactory.class).stream().map(java.util.ServiceLoader.Provider::get).toList();
        assertEquals(List.of(EtcdDirectoryFactory.class), found.stream().<Class<?>>map(Object::getClass).toList());
        assertEquals(EtcdDirectoryFactory.SCHEME, found.getFirst().scheme());
        assertEquals(Spi.VERSION, found.getFirst().spiVersion());
    }

    private static ByteSequence key(String key)
    {
        return ByteSequence.from(key, UTF_8);
    }

    private static void await(BooleanSupplier condition, Duration timeout)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() - deadline < 0, "condition not met within " + timeout);
            Thread.sleep(20);
        }
    }
}
