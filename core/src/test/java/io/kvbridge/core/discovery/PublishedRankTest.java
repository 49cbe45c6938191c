package io.kvbridge.core.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.TestingGeometries;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.core.wire.WireWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.discovery.DirectoryEntry;
import io.kvbridge.spi.discovery.DirectoryHealth;
import io.kvbridge.spi.discovery.EngineDirectory;
import io.kvbridge.spi.geometry.Rank;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The entry a rank publishes, read back as untrusted bytes, and the handshakes' look-ups through it. */
class PublishedRankTest
{
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] OTHER_SECRET = "fedcba9876543210fedcba9876543210".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    // the address the router's parameters name
    private static final InetSocketAddress GIVEN = new InetSocketAddress("127.0.0.1", 5999);
    private static final RankMetadata METADATA = TestingGeometries.metadata("prefill-0", TestingGeometries.perLayer(4, new Rank(1, 2, 0, 2)));

    @Test
    void anEntryDecodesToTheSideChannelAndTheMetadataItWasBuiltFrom()
    {
        DirectoryEntry entry = PublishedRank.entry("10.0.0.5", 5600, METADATA);
        assertEquals("prefill-0", entry.engineId());
        assertEquals(1, entry.ppRank());
        assertEquals(0, entry.tpRank());
        PublishedRank published = PublishedRank.decode(entry, WireLimits.DEFAULT);
        assertEquals(InetSocketAddress.createUnresolved("10.0.0.5", 5600), published.sideChannel());
        assertEquals(METADATA, published.metadata());
    }

    @Test
    void whatDoesNotPassTheSideChannelsChecksIsRefusedWithATypedError()
    {
        assertRefused(new DirectoryEntry("prefill-0", 1, 0, new byte[] {1, 2, 3}), "discovery entry");
        byte[] payload = HandshakePayload.of(METADATA).encode();
        assertRefused(new DirectoryEntry("prefill-0", 1, 0, envelope(1, "h", 5600, payload)), "format");
        assertRefused(new DirectoryEntry("prefill-0", 1, 0, envelope(2, "h/x", 5600, payload)), "host");
        assertRefused(new DirectoryEntry("prefill-0", 1, 0, envelope(2, "h", 0, payload)), "port");
        assertRefused(new DirectoryEntry("prefill-0", 1, 0, envelope(2, "h", 5600, new byte[] {(byte) 0x80})), "wire_version");
        // published under another engine's or another rank's key
        assertRefused(new DirectoryEntry("prefill-1", 1, 0, envelope(2, "h", 5600, payload)), "not the engine and rank of its key");
        assertRefused(new DirectoryEntry("prefill-0", 0, 0, envelope(2, "h", 5600, payload)), "not the engine and rank of its key");
        // larger than a side-channel frame may be
        WireLimits small = new WireLimits(1_024, 65_536, 4_096, 8 << 20, 16);
        KvBridgeException tooLarge = assertThrows(KvBridgeException.class, () -> PublishedRank.decode(PublishedRank.entry("h", 1, METADATA), small));
        assertEquals(ErrorCode.PROTOCOL_ERROR, tooLarge.code());
        assertTrue(tooLarge.getMessage().contains("exceed maxFrameBytes=1024"), tooLarge.getMessage());
    }

    private static byte[] envelope(int format, String host, int port, byte[] payload)
    {
        return new WireWriter().map(5).string("format").integer(format).string("host").string(host).string("port").integer(port)
                .string("payload").binary(payload).string("mac").binary(new byte[0]).toByteArray();
    }

    private static void assertRefused(DirectoryEntry entry, String reason)
    {
        KvBridgeException refused = assertThrows(KvBridgeException.class, () -> PublishedRank.decode(entry, WireLimits.DEFAULT));
        assertEquals(ErrorCode.PROTOCOL_ERROR, refused.code());
        assertTrue(refused.getMessage().contains("the discovery entry of engine " + entry.engineId()) && refused.getMessage().contains(reason),
                refused.getMessage());
    }

    @Test
    void handshakesAreSentWhereTheDirectorySaysAndNowhereWhenItCannotSay()
    {
        InMemoryDirectory directory = new InMemoryDirectory();
        try (Discovery discovery = new Discovery(directory, WireLimits.DEFAULT, SECRET)) {
            assertEquals(Optional.empty(), discovery.locate("prefill-0", List.of(new RankKey(1, 0)), GIVEN));
            discovery.publish("127.0.0.1", 5600, METADATA);
            assertEquals(Optional.of(new InetSocketAddress("127.0.0.1", 5600)), discovery.locate("prefill-0", List.of(new RankKey(1, 0)), GIVEN));
            // a rank nobody published: no address for the handshake, which falls back to the one it was given
            assertEquals(Optional.empty(), discovery.locate("prefill-0", List.of(new RankKey(1, 0), new RankKey(1, 1)), GIVEN));
            directory.entries.put("prefill-0", List.of(new DirectoryEntry("prefill-0", 1, 0, new byte[] {9})));
            assertEquals(Optional.empty(), discovery.locate("prefill-0", List.of(new RankKey(1, 0)), GIVEN), "a malformed entry is not used");
            assertEquals(List.of("prefill-0"), directory.watched);
            assertTrue(discovery.check().orElseThrow().ok());
        }
        assertTrue(directory.closed);
        assertEquals(Optional.empty(), Discovery.NONE.locate("prefill-0", List.of(new RankKey(0, 0)), GIVEN));
        assertEquals(Optional.empty(), Discovery.NONE.check());
    }

    @Test
    void aRankPublishedUnderBothRolesStaysInTheDirectoryUntilBothClosed() throws Exception
    {
        InMemoryDirectory directory = new InMemoryDirectory();
        try (Discovery discovery = new Discovery(directory, WireLimits.DEFAULT, SECRET)) {
            List<RankKey> rank = List.of(new RankKey(1, 0));
            Optional<InetSocketAddress> located = Optional.of(new InetSocketAddress("127.0.0.1", 5600));
            // a kv_both rank: its producer and its consumer publish the same engine and rank
            AutoCloseable producer = discovery.publish("127.0.0.1", 5600, METADATA);
            AutoCloseable consumer = discovery.publish("127.0.0.1", 5600, METADATA);
            assertEquals(1, directory.published.get(), "one entry for the rank");
            consumer.close();
            consumer.close();
            assertEquals(located, discovery.locate("prefill-0", rank, GIVEN), "the consumer closing took the producer's entry with it");
            producer.close();
            assertEquals(List.of(), directory.resolve("prefill-0"), "the entry stayed after both closed");
            AutoCloseable again = discovery.publish("127.0.0.1", 5600, METADATA);
            assertEquals(2, directory.published.get(), "a rank published after both closed is published anew");
            again.close();
            assertEquals(List.of(), directory.resolve("prefill-0"));
        }
    }

    @Test
    void withASecretOnlyEntriesItSignedAreUsedAndEachRefusalIsCountedOnce()
    {
        InMemoryDirectory directory = new InMemoryDirectory();
        try (Discovery discovery = new Discovery(directory, WireLimits.DEFAULT, SECRET)) {
            List<RankKey> rank = List.of(new RankKey(1, 0));
            // whoever can write the store but holds no secret: unsigned, or signed with another secret
            directory.entries.put("prefill-0", List.of(PublishedRank.entry("10.6.6.6", 5600, METADATA)));
            for (int request = 0; request < 3; request++) {
                assertEquals(Optional.empty(), discovery.locate("prefill-0", rank, GIVEN), "an unsigned entry redirected the handshake");
            }
            assertEquals(1, discovery.refusedEntries(), "counted once, not per request");
            directory.entries.put("prefill-0", List.of(PublishedRank.entry("10.6.6.6", 5600, METADATA, EntrySigner.of(OTHER_SECRET))));
            assertEquals(Optional.empty(), discovery.locate("prefill-0", rank, GIVEN), "an entry signed with another secret redirected the handshake");
            assertEquals(2, discovery.refusedEntries());
            // a signed entry whose host was rewritten afterwards
            DirectoryEntry signed = PublishedRank.entry("127.0.0.1", 5600, METADATA, EntrySigner.of(SECRET));
            PublishedRank genuine = PublishedRank.decode(signed, WireLimits.DEFAULT, EntrySigner.of(SECRET));
            assertTrue(genuine.authenticated());
            byte[] rewritten = signed.value().clone();
            byte[] host = "127.0.0.1".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            int at = indexOf(rewritten, host);
            rewritten[at + host.length - 1] = '2';
            directory.entries.put("prefill-0", List.of(new DirectoryEntry("prefill-0", 1, 0, rewritten)));
            assertEquals(Optional.empty(), discovery.locate("prefill-0", rank, GIVEN), "a rewritten entry redirected the handshake");
            assertEquals(3, discovery.refusedEntries());
            assertTrue(discovery.check().orElseThrow().detail().contains("3 entries or located addresses refused"),
                    discovery.check().orElseThrow().detail());

            directory.entries.put("prefill-0", List.of(signed));
            assertEquals(Optional.of(new InetSocketAddress("127.0.0.1", 5600)), discovery.locate("prefill-0", rank, GIVEN));
            // the handshake there failed: said once, however many requests meet it
            discovery.failed("prefill-0", new InetSocketAddress("127.0.0.1", 5600), "connection refused");
            discovery.failed("prefill-0", new InetSocketAddress("127.0.0.1", 5600), "connection refused");
            assertEquals(4, discovery.refusedEntries());
        }
    }

    @Test
    void withoutASecretAnEntryThatDisagreesWithTheGivenAddressIsNotUsed()
    {
        InMemoryDirectory directory = new InMemoryDirectory();
        try (Discovery discovery = new Discovery(directory, WireLimits.DEFAULT)) {
            List<RankKey> rank = List.of(new RankKey(1, 0));
            directory.entries.put("prefill-0", List.of(PublishedRank.entry("127.0.0.1", 5601, METADATA)));
            for (int request = 0; request < 3; request++) {
                assertEquals(Optional.empty(), discovery.locate("prefill-0", rank, GIVEN), "an unverifiable entry redirected the handshake");
            }
            assertEquals(1, discovery.refusedEntries());
            assertEquals(Optional.of(new InetSocketAddress("127.0.0.1", 5601)),
                    discovery.locate("prefill-0", rank, new InetSocketAddress("127.0.0.1", 5601)), "one that agrees is harmless");
        }
    }

    private static int indexOf(byte[] haystack, byte[] needle)
    {
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            if (java.util.Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
                return i;
            }
        }
        throw new AssertionError("not found");
    }

    /** A directory in a map; enough to drive {@link Discovery}. */
    private static final class InMemoryDirectory
            implements EngineDirectory
    {
        final Map<String, List<DirectoryEntry>> entries = new ConcurrentHashMap<>();
        final List<String> watched = new java.util.concurrent.CopyOnWriteArrayList<>();
        final java.util.concurrent.atomic.AtomicInteger published = new java.util.concurrent.atomic.AtomicInteger();
        boolean closed;

        @Override
        public Publication publish(DirectoryEntry entry)
        {
            published.incrementAndGet();
            entries.put(entry.engineId(), List.of(entry));
            return () -> entries.remove(entry.engineId());
        }

        @Override
        public List<DirectoryEntry> resolve(String engineId)
        {
            return entries.getOrDefault(engineId, List.of());
        }

        @Override
        public Subscription watch(String engineId, Consumer<List<DirectoryEntry>> listener)
        {
            watched.add(engineId);
            return () -> { };
        }

        @Override
        public DirectoryHealth health()
        {
            return new DirectoryHealth("memory://test:1", Optional.empty(), "", entries.size(), entries.size());
        }

        @Override
        public void close()
        {
            closed = true;
        }
    }
}
