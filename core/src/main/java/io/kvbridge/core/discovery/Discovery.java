package io.kvbridge.core.discovery;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.Health;
import io.kvbridge.core.sidechannel.EngineLocator;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.discovery.DirectoryEntry;
import io.kvbridge.spi.discovery.DirectoryHealth;
import io.kvbridge.spi.discovery.EngineDirectory;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A bridge's discovery, or none: publishes each rank's {@link PublishedRank entry} while the rank
 * is open, and locates a producer's side channel by engine id for the handshakes. An engine located
 * once is watched from then on, so the directory's cache answers its later handshakes without a
 * round trip to the store, and keeps answering while the store is unreachable. Entries are decoded
 * with the checks side-channel replies get; one that fails them is not used (the handshake goes to
 * the address it was given) and is logged.
 *
 * <p>The notification session of each handshake is still opened over the side channel: its key
 * derives from fresh nonces of both sides, which a published entry cannot carry.
 */
public final class Discovery
        implements EngineLocator, AutoCloseable
{
    /** A bridge without discovery. */
    public static final Discovery NONE = new Discovery(null, WireLimits.DEFAULT);

    private static final Logger LOG = LoggerFactory.getLogger(Discovery.class);
    // engines watched at most; past it they are read without a watch (each handshake asks the store)
    private static final int MAX_WATCHED = 1_024;

    private final EngineDirectory directory;
    private final WireLimits limits;
    private final Object lock = new Object();
    // guarded by lock
    private final Map<String, EngineDirectory.Subscription> watched = new HashMap<>();
    private final Map<String, Decoded> decoded = new HashMap<>();

    /** An engine's entries as decoded, with the entries they were decoded from. */
    private record Decoded(List<DirectoryEntry> source, Map<RankKey, PublishedRank> ranks)
    {
    }

    /**
     * Wraps a directory.
     *
     * @param directory the directory, closed with this; null for none.
     * @param limits bounds every decoder enforces on what is read from it.
     */
    public Discovery(EngineDirectory directory, WireLimits limits)
    {
        this.directory = directory;
        this.limits = requireNonNull(limits, "limits is null");
    }

    /** {@return whether a directory is configured} */
    public boolean enabled()
    {
        return directory != null;
    }

    /**
     * Publishes a rank's entry.
     *
     * @param host the host peers reach the rank's side channel at.
     * @param port the side channel's port.
     * @param metadata what the rank advertises.
     * @return closing it withdraws the entry; does nothing without a directory.
     */
    public AutoCloseable publish(String host, int port, RankMetadata metadata)
    {
        if (directory == null) {
            return () -> { };
        }
        return directory.publish(PublishedRank.entry(host, port, metadata));
    }

    @Override
    public Optional<InetSocketAddress> locate(String engineId, Collection<RankKey> ranks)
    {
        if (directory == null) {
            return Optional.empty();
        }
        Map<RankKey, PublishedRank> known;
        try {
            watch(engineId);
            known = decode(engineId, directory.resolve(engineId));
        }
        catch (KvBridgeException e) {
            LOG.warn("discovery found no side channel of engine {} (using the address given): {}", engineId, e.getMessage());
            return Optional.empty();
        }
        InetSocketAddress found = null;
        for (RankKey rank : ranks) {
            PublishedRank published = known.get(rank);
            if (published == null || (found != null && !found.equals(published.sideChannel()))) {
                // a rank not published, or ranks served by different side channels: not one address for all
                return Optional.empty();
            }
            found = published.sideChannel();
        }
        return found == null ? Optional.empty() : Optional.of(new InetSocketAddress(found.getHostString(), found.getPort()));
    }

    private void watch(String engineId)
    {
        synchronized (lock) {
            if (watched.containsKey(engineId) || watched.size() >= MAX_WATCHED) {
                return;
            }
            // reserved first, so that concurrent handshakes start one watch
            watched.put(engineId, () -> { });
        }
        EngineDirectory.Subscription subscription = directory.watch(engineId, entries -> forget(engineId));
        synchronized (lock) {
            watched.put(engineId, subscription);
        }
    }

    private void forget(String engineId)
    {
        synchronized (lock) {
            decoded.remove(engineId);
        }
    }

    private Map<RankKey, PublishedRank> decode(String engineId, List<DirectoryEntry> entries)
    {
        synchronized (lock) {
            Decoded cached = decoded.get(engineId);
            if (cached != null && cached.source.equals(entries)) {
                return cached.ranks;
            }
        }
        Map<RankKey, PublishedRank> ranks = new HashMap<>();
        for (DirectoryEntry entry : entries) {
            ranks.put(new RankKey(entry.ppRank(), entry.tpRank()), PublishedRank.decode(entry, limits));
        }
        Map<RankKey, PublishedRank> copy = Map.copyOf(ranks);
        synchronized (lock) {
            decoded.put(engineId, new Decoded(entries, copy));
        }
        return copy;
    }

    /** {@return the directory's health, when one is configured} */
    public Optional<DirectoryHealth> health()
    {
        return directory == null ? Optional.empty() : Optional.of(directory.health());
    }

    /** {@return the {@code discovery} health check, when a directory is configured} */
    public Optional<Health.Check> check()
    {
        return health().map(health -> health.reachable() ? Health.Check.passed("discovery", health.describe())
                : Health.Check.failed("discovery", health.describe() + "; cached entries are served meanwhile: check that the store runs and"
                        + " is reachable from this host"));
    }

    /** Stops the watches and closes the directory, which withdraws what this bridge published. */
    @Override
    public void close()
    {
        if (directory == null) {
            return;
        }
        List<EngineDirectory.Subscription> subscriptions;
        synchronized (lock) {
            subscriptions = new ArrayList<>(watched.values());
            watched.clear();
            decoded.clear();
        }
        subscriptions.forEach(EngineDirectory.Subscription::close);
        directory.close();
    }
}
