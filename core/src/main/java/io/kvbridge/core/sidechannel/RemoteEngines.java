package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.HandshakeVerifier.Verified;
import io.kvbridge.core.wire.PeerCapability;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Rank;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The remote engines this engine has shaken hands with. At most one handshake per remote engine
 * runs at a time: callers asking while one runs join it. Results are cached; an engine with no
 * activity for longer than the TTL is evicted before the next handshake starts (or on
 * {@link #evictIdle()}), but never while a caller has marked it in use with
 * {@link #markInFlight(String)}. One lock guards all state; handshakes themselves run outside it,
 * on the executor.
 *
 * <p>Epochs: a caller that expects an epoch (from the transfer parameters or a registration) is not
 * answered from a cached engine of another epoch, the side channel is asked again. When a fetch
 * answers with another epoch than the cached ranks carry, the engine restarted: the cached ranks
 * are dropped, every rank asked for is fetched from the new incarnation, and the old engine goes
 * to the eviction listener, so that nothing cached of it (transport peers, prepared lists of its
 * memory) is used again.
 */
public final class RemoteEngines
{
    private static final Logger LOG = LoggerFactory.getLogger(RemoteEngines.class);

    private final SideChannelClient client;
    private final HandshakeVerifier verifier;
    private final Set<PeerCapability> localCapabilities;
    private final long ttlNanos;
    private final SideChannelClock clock;
    private final Executor executor;
    private final Consumer<RemoteEngine> onEvicted;
    // the transport agent whose notifications the sessions opened at each handshake authenticate; null: open none
    private final String localAgent;
    // the role of the ranks this cache fetches: the peers of the rank that owns it
    private final ServedRole wanted;
    private final byte[] secret;
    // whether the side channel's answers prove which engine sent them: a secret's MAC, or TLS
    private final boolean answersProven;
    private final EngineLocator locator;

    private final Object lock = new Object();
    private final Map<String, Entry> entries = new HashMap<>();

    /** One remote engine's state; guarded by {@code lock}. */
    private static final class Entry
    {
        final InetSocketAddress address;
        RemoteEngine engine;
        CompletableFuture<RemoteEngine> pending;
        Set<RankKey> pendingRanks = Set.of();
        int inFlight;
        long lastActivityNanos;
        // a peer of it failed: the next handshake asks the side channel again instead of answering from the cache
        boolean revalidate;

        Entry(InetSocketAddress address)
        {
            this.address = address;
        }
    }

    /**
     * Creates the registry.
     *
     * @param client fetches payloads from side channels.
     * @param verifier checks fetched payloads.
     * @param localCapabilities what this engine can do, negotiated with each peer.
     * @param ttl how long an idle engine stays cached.
     * @param clock monotonic clock for idle times.
     * @param executor runs handshakes (a virtual-thread executor suits: handshakes mostly wait).
     * @param onEvicted told of each evicted engine, outside the lock, so its resources can be released;
     *     also of an engine replaced by its restarted successor.
     */
    public RemoteEngines(SideChannelClient client, HandshakeVerifier verifier, Collection<PeerCapability> localCapabilities, Duration ttl,
            SideChannelClock clock, Executor executor, Consumer<RemoteEngine> onEvicted)
    {
        this(client, verifier, localCapabilities, ttl, clock, executor, onEvicted, null);
    }

    /**
     * Like the other constructor, opening a notification session with every rank each handshake
     * fetches (see {@link RemoteEngine#session}).
     *
     * @param client fetches payloads from side channels.
     * @param verifier checks fetched payloads.
     * @param localCapabilities what this engine can do, negotiated with each peer.
     * @param ttl how long an idle engine stays cached.
     * @param clock monotonic clock for idle times.
     * @param executor runs handshakes.
     * @param onEvicted told of each evicted engine, outside the lock.
     * @param localAgent the transport agent name of the rank that sends the notifications; null for no sessions.
     */
    public RemoteEngines(SideChannelClient client, HandshakeVerifier verifier, Collection<PeerCapability> localCapabilities, Duration ttl,
            SideChannelClock clock, Executor executor, Consumer<RemoteEngine> onEvicted, String localAgent)
    {
        this(client, verifier, localCapabilities, ttl, clock, executor, onEvicted, localAgent, EngineLocator.NONE);
    }

    /**
     * Like the other constructors, asking a locator (a discovery directory) for each engine's side
     * channel before its handshake: what it finds replaces the address the handshake was given,
     * which stays the fallback.
     *
     * @param client fetches payloads from side channels.
     * @param verifier checks fetched payloads.
     * @param localCapabilities what this engine can do, negotiated with each peer.
     * @param ttl how long an idle engine stays cached.
     * @param clock monotonic clock for idle times.
     * @param executor runs handshakes (and the locator's look-ups).
     * @param onEvicted told of each evicted engine, outside the lock.
     * @param localAgent the transport agent name of the rank that sends the notifications; null for no sessions.
     * @param locator finds side channels by engine id.
     */
    public RemoteEngines(SideChannelClient client, HandshakeVerifier verifier, Collection<PeerCapability> localCapabilities, Duration ttl,
            SideChannelClock clock, Executor executor, Consumer<RemoteEngine> onEvicted, String localAgent, EngineLocator locator)
    {
        this(client, verifier, localCapabilities, ttl, clock, executor, onEvicted, localAgent, locator, null);
    }

    /**
     * Like the other constructors, asking side channels for the ranks of one role, as a rank asks
     * for its peers (an engine that runs both kinds serves a producer and a consumer per rank).
     *
     * @param client fetches payloads from side channels.
     * @param verifier checks fetched payloads.
     * @param localCapabilities what this engine can do, negotiated with each peer.
     * @param ttl how long an idle engine stays cached.
     * @param clock monotonic clock for idle times.
     * @param executor runs handshakes (and the locator's look-ups).
     * @param onEvicted told of each evicted engine, outside the lock.
     * @param localAgent the transport agent name of the rank that sends the notifications; null for no sessions.
     * @param locator finds side channels by engine id.
     * @param wanted the role of the ranks fetched; null to name none.
     */
    public RemoteEngines(SideChannelClient client, HandshakeVerifier verifier, Collection<PeerCapability> localCapabilities, Duration ttl,
            SideChannelClock clock, Executor executor, Consumer<RemoteEngine> onEvicted, String localAgent, EngineLocator locator, ServedRole wanted)
    {
        this.wanted = wanted;
        this.locator = requireNonNull(locator, "locator is null");
        this.localAgent = localAgent;
        this.client = requireNonNull(client, "client is null");
        this.secret = client.settings().secret();
        this.answersProven = secret.length > 0 || client.settings().tls() != null;
        this.verifier = requireNonNull(verifier, "verifier is null");
        requireNonNull(localCapabilities, "localCapabilities is null");
        this.localCapabilities = Set.copyOf(localCapabilities.isEmpty() ? EnumSet.noneOf(PeerCapability.class) : EnumSet.copyOf(localCapabilities));
        this.ttlNanos = requireNonNull(ttl, "ttl is null").toNanos();
        this.clock = requireNonNull(clock, "clock is null");
        this.executor = requireNonNull(executor, "executor is null");
        this.onEvicted = requireNonNull(onEvicted, "onEvicted is null");
        KvBridgeException.check(ttlNanos > 0, ErrorCode.CONFIG_INVALID, "engineTtl=%s is not positive", ttl);
    }

    /**
     * Shakes hands with a remote engine, or joins the handshake already running for it, or returns
     * the cached result when it covers the ranks asked for. Idle engines are evicted first.
     *
     * @param engineId the engine expected at the address; the reply must carry this id.
     * @param address the engine's side channel.
     * @param ranks the ranks whose metadata is needed.
     * @return completes with the engine, or exceptionally with a {@link KvBridgeException} that
     *     names the engine, the address and the reason.
     */
    public CompletableFuture<RemoteEngine> handshake(String engineId, InetSocketAddress address, Collection<RankKey> ranks)
    {
        return handshake(engineId, engineId, address, ranks);
    }

    /**
     * Like {@link #handshake(String, InetSocketAddress, Collection)}, with the result cached under
     * its own key: the stages of one engine served by different processes have one engine id but
     * several side channels, each cached under a key of its own (for example {@code id@host:port}).
     * {@link #cached}, {@link #touch} and {@link #markInFlight} take the key.
     *
     * @param key the cache key.
     * @param engineId the engine expected at the address.
     * @param address the side channel.
     * @param ranks the ranks whose metadata is needed.
     * @return completes with the engine, or exceptionally with a {@link KvBridgeException}.
     */
    public CompletableFuture<RemoteEngine> handshake(String key, String engineId, InetSocketAddress address, Collection<RankKey> ranks)
    {
        return handshake(key, engineId, address, ranks, RankMetadata.UNKNOWN_EPOCH);
    }

    /**
     * Like {@link #handshake(String, String, InetSocketAddress, Collection)}, not answered from a
     * cached engine of another epoch than the one expected. The result may still carry another epoch
     * (the engine restarted since the caller learned of it): the caller compares.
     *
     * @param key the cache key.
     * @param engineId the engine expected at the address.
     * @param address the side channel.
     * @param ranks the ranks whose metadata is needed.
     * @param expectedEpoch the epoch the caller was told of, or {@link RankMetadata#UNKNOWN_EPOCH}.
     * @return completes with the engine, or exceptionally with a {@link KvBridgeException}.
     */
    public CompletableFuture<RemoteEngine> handshake(String key, String engineId, InetSocketAddress address, Collection<RankKey> ranks,
            long expectedEpoch)
    {
        requireNonNull(key, "key is null");
        requireNonNull(engineId, "engineId is null");
        requireNonNull(address, "address is null");
        Set<RankKey> wanted = new LinkedHashSet<>(requireNonNull(ranks, "ranks is null"));
        KvBridgeException.checkArgument(!wanted.isEmpty(), "no ranks to fetch from engine %s", engineId);
        evictIdle();
        CompletableFuture<RemoteEngine> running;
        CompletableFuture<RemoteEngine> started;
        List<RankKey> missing = new ArrayList<>();
        synchronized (lock) {
            Entry entry = entries.get(key);
            if (entry != null && !entry.address.equals(address)) {
                return CompletableFuture.failedFuture(new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                        "engine %s is known at %s but was asked for at %s (engine ids must be unique; wait for the old engine to be evicted)",
                        engineId, entry.address, address)));
            }
            if (entry != null && entry.pending != null) {
                if (entry.pendingRanks.containsAll(wanted)) {
                    return entry.pending.copy();
                }
                running = entry.pending;
                started = null;
            }
            else if (answers(entry, wanted, expectedEpoch)) {
                entry.lastActivityNanos = clock.monotonicNanos();
                return CompletableFuture.completedFuture(entry.engine);
            }
            else {
                if (entry == null) {
                    entry = new Entry(address);
                    entries.put(key, entry);
                }
                // a cached engine of another epoch than expected may be gone: every rank is asked for again
                boolean stale = entry.engine != null && (entry.revalidate
                        || expectedEpoch != RankMetadata.UNKNOWN_EPOCH && entry.engine.epoch() != expectedEpoch);
                for (RankKey rank : wanted) {
                    if (stale || entry.engine == null || !entry.engine.ranks().containsKey(rank)) {
                        missing.add(rank);
                    }
                }
                entry.pending = new CompletableFuture<>();
                entry.pendingRanks = wanted;
                running = null;
                started = entry.pending;
            }
        }
        if (running != null) {
            // another handshake for other ranks is running: wait for it, then fetch what is still missing
            return running.handle((engine, failure) -> null).thenCompose(ignored -> handshake(key, engineId, address, wanted, expectedEpoch));
        }
        try {
            executor.execute(() -> run(key, engineId, address, missing, expectedEpoch, started));
        }
        catch (RejectedExecutionException e) {
            finish(key, null, new KvBridgeException(ErrorCode.CLOSED, "the handshake executor refused the handshake with engine " + engineId, e),
                    started);
        }
        return started.copy();
    }

    private void run(String key, String engineId, InetSocketAddress address, List<RankKey> missing, long expectedEpoch,
            CompletableFuture<RemoteEngine> future)
    {
        RemoteEngine previous;
        synchronized (lock) {
            Entry entry = entries.get(key);
            previous = entry == null ? null : entry.engine;
        }
        try {
            finish(key, located(engineId, address, missing, previous, expectedEpoch), null, future);
        }
        catch (KvBridgeException e) {
            finish(key, null, new KvBridgeException(e.code(), String.format(Locale.ROOT, "handshake with engine %s at %s failed: %s",
                    engineId, address, withoutCode(e)), e), future);
        }
        catch (RuntimeException | Error e) {
            finish(key, null, e, future);
            throw e;
        }
    }

    /**
     * Shakes hands where the locator says the engine serves now, and at the address given when the
     * locator knows none, the handshake there fails, or it answers with another epoch than the caller
     * expects and nothing proves who answered: a directory entry is a hint, and a stale or forged one
     * must not fail a request whose parameters name the engine's address. Where the side channel
     * authenticates its answers (a shared secret, or TLS), another epoch there is the engine itself,
     * restarted, which the caller reports as a stale epoch rather than asking an old address.
     */
    private RemoteEngine located(String engineId, InetSocketAddress address, List<RankKey> missing, RemoteEngine previous, long expectedEpoch)
    {
        InetSocketAddress target = locator.locate(engineId, missing, address).orElse(address);
        if (!target.equals(address)) {
            try {
                RemoteEngine found = perform(engineId, address, target, missing, previous);
                if (expectedEpoch == RankMetadata.UNKNOWN_EPOCH || found.epoch() == expectedEpoch || answersProven) {
                    return found;
                }
                locator.failed(engineId, target, "the side channel there answered with epoch " + RankMetadata.formatEpoch(found.epoch())
                        + ", not the expected " + RankMetadata.formatEpoch(expectedEpoch));
            }
            catch (KvBridgeException e) {
                locator.failed(engineId, target, withoutCode(e));
            }
        }
        return perform(engineId, address, address, missing, previous);
    }

    private RemoteEngine perform(String engineId, InetSocketAddress address, InetSocketAddress target, List<RankKey> missing, RemoteEngine previous)
    {
        Map<RankKey, Verified> ranks = new HashMap<>(previous == null ? Map.of() : previous.ranks());
        long epoch = RankMetadata.UNKNOWN_EPOCH;
        Map<RankKey, SessionKey> sessions = new HashMap<>(previous == null ? Map.of() : previous.sessions());
        ClockOffset offset = previous == null ? null : previous.clockOffset();
        SideChannelClient.SessionRequest session = localAgent == null ? null : new SideChannelClient.SessionRequest(localAgent, SessionKey.newNonce());
        for (SideChannelClient.Fetched fetched : client.fetch(target, missing, wanted, session)) {
            Verified verified = verifier.verify(fetched.payload());
            String replied = verified.metadata().engineId();
            if (!replied.equals(engineId)) {
                throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                        "engine id mismatch: asked for engine %s, the side channel serves engine %s (the address belongs to another engine:"
                                + " check where the engine id and address come from)", engineId, replied));
            }
            Rank rank = verified.metadata().rank();
            if (!fetched.rank().matches(rank)) {
                throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                        "asked for rank %s, the reply describes rank %s", fetched.rank(), rank));
            }
            long answered = verified.metadata().epoch();
            if (epoch != RankMetadata.UNKNOWN_EPOCH && answered != epoch) {
                // the ranks of one side channel share an epoch: two in one reply are a restart between the answers
                throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT, "the side channel answered for rank %s with"
                        + " epoch %s and for another rank with epoch %s: the engine restarted during the handshake; retry", rank,
                        RankMetadata.formatEpoch(answered), RankMetadata.formatEpoch(epoch)));
            }
            epoch = answered;
            if (previous != null && answered != previous.epoch()) {
                // restarted since the cached ranks were fetched: they describe memory that is gone, so every rank comes from the new one
                Set<RankKey> all = new LinkedHashSet<>(previous.ranks().keySet());
                all.addAll(missing);
                LOG.info("engine {} at {} restarted: epoch {} before, {} now; fetching ranks {} again", engineId, address,
                        RankMetadata.formatEpoch(previous.epoch()), RankMetadata.formatEpoch(answered), all);
                return perform(engineId, address, target, new ArrayList<>(all), null);
            }
            for (Verified other : ranks.values()) {
                Rank otherRank = other.metadata().rank();
                if (otherRank.ppSize() != rank.ppSize() || otherRank.tpSize() != rank.tpSize()) {
                    throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                            "the engine's ranks disagree on their sizes: rank %s says ppSize=%d tpSize=%d, rank %s says ppSize=%d tpSize=%d",
                            rank, rank.ppSize(), rank.tpSize(), otherRank, otherRank.ppSize(), otherRank.tpSize()));
                }
            }
            ranks.put(fetched.rank(), verified);
            if (session != null) {
                // the engine id is the one asked for and checked above, as the server derives with its own
                sessions.put(fetched.rank(), SessionKey.derive(secret, session.nonce(), fetched.sessionNonce(), localAgent, engineId,
                        fetched.rank().ppRank(), fetched.rank().tpRank()));
            }
            offset = fetched.clockSample().better(offset);
        }
        Set<PeerCapability> remote = EnumSet.allOf(PeerCapability.class);
        for (Verified verified : ranks.values()) {
            remote.retainAll(verified.metadata().capabilities());
        }
        Set<PeerCapability> common = PeerCapability.negotiate(localCapabilities, remote, "engine " + engineId);
        // cached under the address asked for, which the caller's keys are made of, wherever the directory found it
        return new RemoteEngine(engineId, address, ranks, common, offset, sessions, target);
    }

    private void finish(String key, RemoteEngine engine, Throwable failure, CompletableFuture<RemoteEngine> future)
    {
        RemoteEngine restarted = null;
        synchronized (lock) {
            Entry entry = entries.get(key);
            if (entry != null && entry.pending == future) {
                entry.pending = null;
                entry.pendingRanks = Set.of();
                if (engine != null) {
                    if (entry.engine != null && entry.engine.epoch() != engine.epoch()) {
                        restarted = entry.engine;
                    }
                    entry.engine = engine;
                    entry.revalidate = false;
                    entry.lastActivityNanos = clock.monotonicNanos();
                }
                else if (entry.engine == null) {
                    // nothing was ever learned about this engine: forget it, so a retry starts afresh
                    entries.remove(key);
                }
            }
        }
        if (restarted != null) {
            // before the future completes: the listener's clean-up is queued ahead of the caller's use of the new engine
            onEvicted.accept(restarted);
        }
        if (engine != null) {
            LOG.debug("handshake with engine {} at {} done: ranks {}, capabilities {}, clock offset {} ns (round trip {} ns)", engine.engineId(),
                    engine.address(), engine.ranks().keySet(), PeerCapability.wireNames(engine.capabilities()), engine.clockOffset().offsetNanos(),
                    engine.clockOffset().roundTripNanos());
            future.complete(engine);
        }
        else {
            LOG.warn("handshake with {} failed: {}", key, failure.getMessage());
            future.completeExceptionally(failure);
        }
    }

    private static String withoutCode(KvBridgeException e)
    {
        String message = e.getMessage();
        String prefix = e.code().id() + ": ";
        return message.startsWith(prefix) ? message.substring(prefix.length()) : message;
    }

    private static boolean answers(Entry entry, Collection<RankKey> ranks, long expectedEpoch)
    {
        return entry != null && entry.engine != null && !entry.revalidate && entry.engine.ranks().keySet().containsAll(ranks)
                && (expectedEpoch == RankMetadata.UNKNOWN_EPOCH || entry.engine.epoch() == expectedEpoch);
    }

    /**
     * Tells whether {@link #handshake(String, String, InetSocketAddress, Collection, long)} would
     * answer from the cache now, without asking the side channel.
     *
     * @param key the cache key.
     * @param ranks the ranks that would be asked for.
     * @param expectedEpoch the epoch that would be expected, or {@link RankMetadata#UNKNOWN_EPOCH}.
     * @return whether a cached engine covers the ranks with that epoch and is not to be revalidated.
     */
    public boolean answersFromCache(String key, Collection<RankKey> ranks, long expectedEpoch)
    {
        synchronized (lock) {
            return answers(entries.get(key), ranks, expectedEpoch);
        }
    }

    /**
     * Has the next handshake under a key ask the side channel again for every rank, instead of
     * answering from the cache: a peer of the engine failed, and it may have restarted (then the
     * handshake finds a new epoch, and the old engine goes to the eviction listener).
     *
     * @param key the cache key; unknown ones are ignored.
     */
    public void revalidate(String key)
    {
        synchronized (lock) {
            Entry entry = entries.get(key);
            if (entry != null) {
                entry.revalidate = true;
            }
        }
    }

    /**
     * Returns a cached engine.
     *
     * @param engineId the engine.
     * @return the engine, or empty when no handshake with it has completed (or it was evicted).
     */
    public Optional<RemoteEngine> cached(String engineId)
    {
        synchronized (lock) {
            Entry entry = entries.get(engineId);
            return Optional.ofNullable(entry == null ? null : entry.engine);
        }
    }

    /**
     * Records activity with an engine, postponing its eviction.
     *
     * @param engineId the engine; unknown ones are ignored.
     */
    public void touch(String engineId)
    {
        synchronized (lock) {
            Entry entry = entries.get(engineId);
            if (entry != null) {
                entry.lastActivityNanos = clock.monotonicNanos();
            }
        }
    }

    /**
     * Marks an engine in use (e.g. a transfer with it was posted): it is not evicted until the
     * returned mark is closed. Marks nest; each must be closed once.
     *
     * @param engineId a cached engine.
     * @return the mark; closing it records activity.
     * @throws KvBridgeException with {@link ErrorCode#PEER_UNKNOWN} when the engine is not cached.
     */
    public InFlight markInFlight(String engineId)
    {
        synchronized (lock) {
            Entry entry = entries.get(engineId);
            if (entry == null || entry.engine == null) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "engine " + engineId + " is not known (or was evicted): shake hands with it first");
            }
            entry.inFlight++;
            entry.lastActivityNanos = clock.monotonicNanos();
            return new InFlight(engineId, entry);
        }
    }

    /**
     * Evicts every engine idle for longer than the TTL, except engines in use or with a handshake
     * running, and tells the eviction listener about each.
     *
     * @return the evicted engines.
     */
    public List<RemoteEngine> evictIdle()
    {
        List<RemoteEngine> evicted = new ArrayList<>();
        synchronized (lock) {
            long now = clock.monotonicNanos();
            Iterator<Map.Entry<String, Entry>> iterator = entries.entrySet().iterator();
            while (iterator.hasNext()) {
                Entry entry = iterator.next().getValue();
                if (entry.engine != null && entry.pending == null && entry.inFlight == 0 && now - entry.lastActivityNanos > ttlNanos) {
                    evicted.add(entry.engine);
                    iterator.remove();
                }
            }
        }
        for (RemoteEngine engine : evicted) {
            LOG.info("evicted engine {} at {}: idle for longer than engineTtl={} ms", engine.engineId(), engine.address(), ttlNanos / 1_000_000);
            onEvicted.accept(engine);
        }
        return evicted;
    }

    /** A mark that keeps an engine from being evicted while it is in use. */
    public final class InFlight
            implements AutoCloseable
    {
        private final String engineId;
        private final Entry entry;
        private final AtomicBoolean released = new AtomicBoolean();

        private InFlight(String engineId, Entry entry)
        {
            this.engineId = engineId;
            this.entry = entry;
        }

        /** {@return the engine the mark holds} */
        public String engineId()
        {
            return engineId;
        }

        /** Releases the mark and records activity; later calls do nothing. */
        @Override
        public void close()
        {
            if (released.compareAndSet(false, true)) {
                synchronized (lock) {
                    entry.inFlight--;
                    entry.lastActivityNanos = clock.monotonicNanos();
                }
            }
        }
    }
}
