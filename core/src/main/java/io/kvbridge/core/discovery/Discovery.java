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
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A bridge's discovery, or none: publishes each rank's {@link PublishedRank entry} while the rank
 * is open, and locates a producer's side channel by engine id for the handshakes. An engine located
 * once is watched from then on, so the directory's cache answers its later handshakes without a
 * round trip to the store, and keeps answering while the store is unreachable.
 *
 * <p>An entry is a hint, since whoever can write the store can write one. With a shared secret
 * every entry is signed ({@link EntrySigner}) and one whose MAC fails is not used; without one
 * nothing can be verified, so an entry is used only where it agrees with the address the caller
 * was given (the router's parameters), and discovery then never redirects a handshake. Entries are
 * also decoded with the checks side-channel replies get. A handshake that fails at a located address
 * goes to the address given ({@link #failed}). Each refused entry and each failed located address
 * is counted and logged once, not per request ({@link #refusedEntries()}).
 *
 * <p>The notification session of each handshake is still opened over the side channel: its key
 * derives from fresh nonces of both sides, which a published entry cannot carry.
 */
public final class Discovery
        implements EngineLocator, AutoCloseable
{
    /** A bridge without discovery. */
    public static final Discovery NONE = new Discovery(null, WireLimits.DEFAULT);
    // distinct refusals remembered for logging once; past it the memory starts again
    private static final int MAX_REPORTED = 4_096;

    private static final Logger LOG = LoggerFactory.getLogger(Discovery.class);
    // engines watched at most; past it they are read without a watch (each handshake asks the store)
    private static final int MAX_WATCHED = 1_024;

    private final EngineDirectory directory;
    private final WireLimits limits;
    // null without a shared secret: entries are then unverifiable
    private final EntrySigner signer;
    private final AtomicLong refused = new AtomicLong();
    private final Object lock = new Object();
    // guarded by lock
    private final Map<String, EngineDirectory.Subscription> watched = new HashMap<>();
    private final Map<String, Decoded> decoded = new HashMap<>();
    private final Set<String> reported = new HashSet<>();
    private final Map<String, SharedEntry> published = new HashMap<>();

    /** One directory entry and how many open ranks of this bridge publish it; holders guarded by lock. */
    private static final class SharedEntry
    {
        final EngineDirectory.Publication publication;
        int holders;

        SharedEntry(EngineDirectory.Publication publication)
        {
            this.publication = publication;
        }
    }

    /** An engine's usable entries as decoded (refused ones left out), with the entries they were decoded from. */
    private record Decoded(List<DirectoryEntry> source, Map<RankKey, PublishedRank> ranks)
    {
    }

    /**
     * Wraps a directory without a shared secret: entries are published unsigned and never redirect a handshake.
     *
     * @param directory the directory, closed with this; null for none.
     * @param limits bounds every decoder enforces on what is read from it.
     */
    public Discovery(EngineDirectory directory, WireLimits limits)
    {
        this(directory, limits, new byte[0]);
    }

    /**
     * Wraps a directory.
     *
     * @param directory the directory, closed with this; null for none.
     * @param limits bounds every decoder enforces on what is read from it.
     * @param secret the side channel's shared secret, which signs what is published and must have
     *     signed what is used; empty for none.
     */
    public Discovery(EngineDirectory directory, WireLimits limits, byte[] secret)
    {
        this.directory = directory;
        this.limits = requireNonNull(limits, "limits is null");
        this.signer = EntrySigner.of(requireNonNull(secret, "secret is null"));
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
     * @return closing it withdraws the entry once every rank of this bridge that published the same
     *     engine and rank (the producer and the consumer of a {@code kv_both} rank) closed its own;
     *     does nothing without a directory.
     */
    public AutoCloseable publish(String host, int port, RankMetadata metadata)
    {
        if (directory == null) {
            return () -> { };
        }
        DirectoryEntry entry = PublishedRank.entry(host, port, metadata, signer);
        String key = entry.engineId() + "|" + entry.ppRank() + "|" + entry.tpRank();
        SharedEntry shared;
        synchronized (lock) {
            shared = published.get(key);
            if (shared == null) {
                shared = new SharedEntry(directory.publish(entry));
                published.put(key, shared);
            }
            shared.holders++;
        }
        SharedEntry held = shared;
        AtomicBoolean withdrawn = new AtomicBoolean();
        return () -> {
            if (withdrawn.compareAndSet(false, true)) {
                withdraw(key, held);
            }
        };
    }

    // the directory keys an entry by engine and rank only: the producer and consumer of one kv_both
    // rank share it, and it leaves the directory when the last of them closes
    private void withdraw(String key, SharedEntry shared)
    {
        synchronized (lock) {
            if (--shared.holders > 0) {
                return;
            }
            published.remove(key, shared);
        }
        shared.publication.close();
    }

    @Override
    public Optional<InetSocketAddress> locate(String engineId, Collection<RankKey> ranks, InetSocketAddress given)
    {
        requireNonNull(given, "given is null");
        if (directory == null) {
            return Optional.empty();
        }
        Map<RankKey, PublishedRank> known;
        try {
            watch(engineId);
            known = decode(engineId, directory.resolve(engineId));
        }
        catch (KvBridgeException e) {
            logOnce("resolve|" + engineId + "|" + e.getMessage(), "discovery found no side channel of engine " + engineId + " (using the address"
                    + " given): " + e.getMessage());
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
        if (found == null) {
            return Optional.empty();
        }
        if (signer == null && !sameAddress(found, given)) {
            // nothing proves who wrote it: a forged entry would send the handshake, and the transfer, to its writer
            String named = found.getHostString() + ":" + found.getPort();
            String routed = given.getHostString() + ":" + given.getPort();
            report("unverified|" + engineId + "|" + named + "|" + routed, "discovery entry of engine " + engineId + " names side channel " + named
                    + " but the router's parameters name " + routed + "; without a shared secret the entry cannot be verified, so it is not used"
                    + " (configure a secret to let discovery redirect handshakes)");
            return Optional.empty();
        }
        return Optional.of(new InetSocketAddress(found.getHostString(), found.getPort()));
    }

    @Override
    public void failed(String engineId, InetSocketAddress located, String reason)
    {
        report("failed|" + engineId + "|" + located.getHostString() + ":" + located.getPort(), "discovery located engine " + engineId + " at "
                + located.getHostString() + ":" + located.getPort() + " but the handshake there failed (" + reason
                + "); using the address the router's parameters name (a stale entry, or one its engine did not write)");
    }

    /** {@return entries refused (unsigned, wrongly signed, malformed, or unverifiable and disagreeing) and located addresses that failed, each counted once} */
    public long refusedEntries()
    {
        return refused.get();
    }

    private static boolean sameAddress(InetSocketAddress found, InetSocketAddress given)
    {
        if (found.getPort() != given.getPort()) {
            return false;
        }
        if (found.getHostString().equalsIgnoreCase(given.getHostString())) {
            return true;
        }
        InetSocketAddress resolved = new InetSocketAddress(found.getHostString(), found.getPort());
        return !resolved.isUnresolved() && !given.isUnresolved() && resolved.getAddress().equals(given.getAddress());
    }

    /** Counts and logs a refusal the first time it is seen. */
    private void report(String key, String message)
    {
        if (logOnce(key, message)) {
            refused.incrementAndGet();
        }
    }

    /** Logs a problem the first time it is seen, and tells whether it was new. */
    private boolean logOnce(String key, String message)
    {
        synchronized (lock) {
            if (reported.size() >= MAX_REPORTED) {
                reported.clear();
            }
            if (!reported.add(key)) {
                return false;
            }
        }
        LOG.warn(message);
        return true;
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
            try {
                ranks.put(new RankKey(entry.ppRank(), entry.tpRank()), PublishedRank.decode(entry, limits, signer));
            }
            catch (KvBridgeException e) {
                // left out, so a handshake needing the rank goes to the address it was given
                report("entry|" + entry.engineId() + "|" + entry.ppRank() + "|" + entry.tpRank() + "|" + Arrays.hashCode(entry.value()),
                        e.getMessage() + "; the handshake goes to the address the router's parameters name");
            }
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
        long refusals = refused.get();
        String refusedNote = refusals == 0 ? "" : "; " + refusals + " entries or located addresses refused (see the log)";
        return health().map(health -> health.reachable() ? Health.Check.passed("discovery", health.describe() + refusedNote)
                : Health.Check.failed("discovery", health.describe() + refusedNote + "; cached entries are served meanwhile: check that the store"
                        + " runs and is reachable from this host"));
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
