package io.kvbridge.discovery.etcd;

import static java.util.Objects.requireNonNull;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.discovery.DirectoryConfig;
import io.kvbridge.spi.discovery.DirectoryEntry;
import io.kvbridge.spi.discovery.DirectoryHealth;
import io.kvbridge.spi.discovery.EngineDirectory;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An {@link EngineDirectory} in etcd, through jetcd. Keys: {@code /kvbridge/engines/<engineId>/<ppRank>/<tpRank>};
 * values: the entry's bytes, attached to one lease per directory with the configured TTL.
 *
 * <p>One maintenance thread renews the lease every third of its TTL (a single keep-alive call, so a
 * failure is seen at once), grants a new lease and puts every entry again when etcd lost the old
 * one (an outage longer than the TTL), puts again what could not be put while etcd was down, and,
 * when etcd answers again after an outage, reads every watched engine afresh and restarts its
 * watch from there, so that nothing changed during the outage is missed. Every call to etcd is
 * bounded by the request timeout; a call that fails marks etcd unreachable (see {@link #health()})
 * until one succeeds.
 *
 * <p>What is read back is untrusted: keys must parse and name the engine asked for, values are
 * bounded by {@code maxEntryBytes}, and an engine with more than {@value EtcdKeys#MAX_RANKS_PER_ENGINE}
 * keys is refused.
 */
public final class EtcdDirectory
        implements EngineDirectory
{
    private static final Logger LOG = LoggerFactory.getLogger(EtcdDirectory.class);
    private static final Comparator<DirectoryEntry> BY_RANK = Comparator.comparingInt(DirectoryEntry::ppRank).thenComparingInt(DirectoryEntry::tpRank);
    // room for a full engine's entries in one get; beyond it gRPC refuses the reply
    private static final int MAX_INBOUND_BYTES = 64 << 20;

    private final DirectoryConfig config;
    private final String location;
    private final Client client;
    private final KV kv;
    private final Lease leases;
    private final Watch watches;
    private final ScheduledExecutorService maintenance;
    private final EtcdCalls calls;

    private final Object lock = new Object();
    // guarded by lock
    private final Map<String, byte[]> published = new LinkedHashMap<>();
    private final Map<String, Cached> cache = new HashMap<>();
    // withdrawn while etcd did not answer: still attached to the live lease until deleted
    private final Set<String> withdrawing = new LinkedHashSet<>();
    private long leaseId;
    private boolean republish;
    private boolean closed;

    /** What is known of one engine; guarded by {@code lock}. */
    private static final class Cached
    {
        final String engineId;
        final Map<String, DirectoryEntry> byKey = new HashMap<>();
        final List<Consumer<List<DirectoryEntry>>> listeners = new CopyOnWriteArrayList<>();
        Watch.Watcher watcher;
        // the watch follows etcd: the cache answers resolve without a round trip
        boolean live;
        // read from etcd at least once: what the cache holds is known, not merely empty
        boolean read;

        Cached(String engineId)
        {
            this.engineId = engineId;
        }

        List<DirectoryEntry> entries()
        {
            List<DirectoryEntry> entries = new ArrayList<>(byKey.values());
            entries.sort(BY_RANK);
            return List.copyOf(entries);
        }
    }

    /**
     * Opens a directory; connects lazily.
     *
     * @param config the endpoints, lease TTL, request timeout and size limit.
     */
    public EtcdDirectory(DirectoryConfig config)
    {
        this.config = requireNonNull(config, "config is null");
        KvBridgeException.check(config.scheme().equals(EtcdDirectoryFactory.SCHEME), ErrorCode.CONFIG_INVALID,
                "discovery=%s is not an etcd location (expected etcd://host:port[,host:port...])", config.location());
        this.location = config.location();
        this.calls = new EtcdCalls(location, config.requestTimeout());
        List<URI> endpoints = new ArrayList<>();
        for (InetSocketAddress endpoint : config.endpoints()) {
            String host = endpoint.getHostString();
            endpoints.add(URI.create("http://" + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + endpoint.getPort()));
        }
        this.client = Client.builder()
                .endpoints(endpoints)
                .connectTimeout(config.requestTimeout())
                .keepaliveTime(Duration.ofSeconds(10))
                .keepaliveTimeout(config.requestTimeout())
                // calls are bounded here: jetcd's own retries must not outlast them by much
                .retryMaxDuration(config.requestTimeout())
                .retryDelay(50)
                .retryMaxDelay(500)
                .maxInboundMessageSize(MAX_INBOUND_BYTES)
                .build();
        this.kv = client.getKVClient();
        this.leases = client.getLeaseClient();
        this.watches = client.getWatchClient();
        this.maintenance = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("kvbridge-etcd-" + location).factory());
        long periodNanos = Math.max(100_000_000L, config.leaseTtl().toNanos() / 3);
        maintenance.scheduleWithFixedDelay(this::maintain, periodNanos, periodNanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public Publication publish(DirectoryEntry entry)
    {
        requireNonNull(entry, "entry is null");
        byte[] value = entry.value();
        if (value.length > config.maxEntryBytes()) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "the entry of engine %s rank pp%d:tp%d has %d bytes, over maxEntryBytes=%d: not published (raise discovery.maxEntryBytes"
                            + " on every engine)", entry.engineId(), entry.ppRank(), entry.tpRank(), value.length, config.maxEntryBytes()));
        }
        String key = EtcdKeys.key(entry).toString();
        boolean down;
        synchronized (lock) {
            checkOpen();
            published.put(key, value);
            // while etcd is known to be down, the next rank of a starting engine does not wait for it again
            down = calls.unreachableSince().isPresent();
            republish |= down;
        }
        if (down) {
            return new EntryPublication(key, value);
        }
        try {
            put(key, value, lease());
        }
        catch (KvBridgeException e) {
            // kept: the maintenance thread puts it once etcd answers; meanwhile health says why
            synchronized (lock) {
                republish = true;
            }
            calls.willRetry("publish " + entry, e.getMessage());
        }
        return new EntryPublication(key, value);
    }

    private final class EntryPublication
            implements Publication
    {
        private final String key;
        private final byte[] value;
        private boolean withdrawn;

        EntryPublication(String key, byte[] value)
        {
            this.key = key;
            this.value = value;
        }

        @Override
        public void close()
        {
            synchronized (lock) {
                // a later publication of the same rank replaced this one: leave it
                if (withdrawn || closed || published.get(key) != value) {
                    withdrawn = true;
                    return;
                }
                withdrawn = true;
                published.remove(key);
                withdrawing.add(key);
            }
            // while etcd is known to be down, closing does not wait for it: the maintenance thread deletes the key
            if (calls.unreachableSince().isEmpty()) {
                deleteWithdrawn(key);
            }
        }
    }

    /** Deletes a withdrawn key, unless it was published again meanwhile; one etcd did not take stays for the maintenance thread. */
    private void deleteWithdrawn(String key)
    {
        synchronized (lock) {
            if (published.containsKey(key)) {
                withdrawing.remove(key);
                return;
            }
        }
        try {
            calls.await(kv.delete(bytes(key)), "delete " + key);
            synchronized (lock) {
                withdrawing.remove(key);
            }
        }
        catch (KvBridgeException e) {
            calls.willRetry("withdraw " + key, e.getMessage());
        }
    }

    @Override
    public List<DirectoryEntry> resolve(String engineId)
    {
        DirectoryEntry.checkEngineId(engineId);
        Optional<Instant> down = calls.unreachableSince();
        synchronized (lock) {
            checkOpen();
            Cached cached = cache.get(engineId);
            if (cached != null && cached.read && (cached.live || down.isPresent())) {
                return cached.entries();
            }
        }
        if (down.isPresent()) {
            // known to be down: a handshake waiting for this falls back now, not after the request timeout
            throw new KvBridgeException(ErrorCode.DISCOVERY_UNAVAILABLE, String.format(Locale.ROOT,
                    "etcd at %s is unreachable since %s and nothing is cached for engine %s (%s)", location, down.get(), engineId, calls.failure()));
        }
        try {
            return read(engineId).entries;
        }
        catch (KvBridgeException e) {
            if (e.code() != ErrorCode.DISCOVERY_UNAVAILABLE) {
                throw e;
            }
            synchronized (lock) {
                Cached cached = cache.get(engineId);
                if (cached != null && cached.read) {
                    LOG.debug("{}: answering engine {} from the cache: {}", location, engineId, e.getMessage());
                    return cached.entries();
                }
            }
            throw e;
        }
    }

    /** An engine's entries as read, and the revision they were read at. */
    private record Read(List<DirectoryEntry> entries, long revision)
    {
    }

    /** Reads an engine's entries from etcd and caches them. */
    private Read read(String engineId)
    {
        // serializable: answered by the member asked, without a round of consensus; the watch started from this revision
        // catches up with anything newer
        GetResponse response = calls.await(kv.get(EtcdKeys.enginePrefix(engineId), GetOption.builder().isPrefix(true).withSerializable(true)
                .withLimit(EtcdKeys.MAX_RANKS_PER_ENGINE + 1).build()), "get engine " + engineId);
        if (response.getKvs().size() > EtcdKeys.MAX_RANKS_PER_ENGINE) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "engine %s has more than %d keys under %s%s/: refused (no engine has that many ranks: remove the foreign keys)",
                    engineId, EtcdKeys.MAX_RANKS_PER_ENGINE, EtcdKeys.ROOT, engineId));
        }
        Map<String, DirectoryEntry> byKey = new HashMap<>();
        for (KeyValue keyValue : response.getKvs()) {
            byKey.put(keyValue.getKey().toString(), EtcdKeys.entry(engineId, keyValue.getKey(), keyValue.getValue(), config.maxEntryBytes()));
        }
        List<DirectoryEntry> entries;
        synchronized (lock) {
            Cached cached = cache.computeIfAbsent(engineId, Cached::new);
            cached.byKey.clear();
            cached.byKey.putAll(byKey);
            cached.read = true;
            entries = cached.entries();
        }
        return new Read(entries, response.getHeader().getRevision());
    }

    @Override
    public Subscription watch(String engineId, Consumer<List<DirectoryEntry>> listener)
    {
        DirectoryEntry.checkEngineId(engineId);
        requireNonNull(listener, "listener is null");
        boolean start;
        synchronized (lock) {
            checkOpen();
            Cached cached = cache.computeIfAbsent(engineId, Cached::new);
            cached.listeners.add(listener);
            start = cached.watcher == null;
        }
        // while etcd is known to be down the maintenance thread starts the watch once it answers
        if (start && calls.unreachableSince().isEmpty()) {
            try {
                restartWatch(engineId);
            }
            catch (KvBridgeException e) {
                // the maintenance thread starts it once etcd answers
                calls.willRetry("watch engine " + engineId, e.getMessage());
            }
        }
        return () -> {
            Watch.Watcher stopped = null;
            synchronized (lock) {
                Cached cached = cache.get(engineId);
                if (cached != null && cached.listeners.remove(listener) && cached.listeners.isEmpty()) {
                    stopped = cached.watcher;
                    cached.watcher = null;
                    cached.live = false;
                }
            }
            if (stopped != null) {
                stopped.close();
            }
        };
    }

    /** Reads an engine afresh and watches it from the revision read, replacing its watch. */
    private void restartWatch(String engineId)
    {
        Read read = read(engineId);
        Watch.Watcher watcher = watches.watch(EtcdKeys.enginePrefix(engineId), WatchOption.builder().isPrefix(true).withRevision(read.revision + 1).build(),
                Watch.listener(response -> changed(engineId, response), failure -> watchFailed(engineId, failure)));
        Watch.Watcher previous;
        List<Consumer<List<DirectoryEntry>>> listeners;
        synchronized (lock) {
            Cached cached = cache.get(engineId);
            if (closed || cached == null || cached.listeners.isEmpty()) {
                previous = watcher;
                listeners = List.of();
            }
            else {
                previous = cached.watcher;
                cached.watcher = watcher;
                cached.live = true;
                listeners = List.copyOf(cached.listeners);
            }
        }
        if (previous != null) {
            previous.close();
        }
        notify(listeners, read.entries);
    }

    private void changed(String engineId, WatchResponse response)
    {
        List<DirectoryEntry> entries;
        List<Consumer<List<DirectoryEntry>>> listeners;
        synchronized (lock) {
            Cached cached = cache.get(engineId);
            if (cached == null) {
                return;
            }
            for (WatchEvent event : response.getEvents()) {
                KeyValue keyValue = event.getKeyValue();
                String key = keyValue.getKey().toString();
                if (event.getEventType() == WatchEvent.EventType.DELETE) {
                    cached.byKey.remove(key);
                    continue;
                }
                try {
                    cached.byKey.put(key, EtcdKeys.entry(engineId, keyValue.getKey(), keyValue.getValue(), config.maxEntryBytes()));
                }
                catch (KvBridgeException e) {
                    // refused and not kept: a consumer must not act on it
                    cached.byKey.remove(key);
                    LOG.warn("{}: refused a change of engine {}: {}", location, engineId, e.getMessage());
                }
            }
            entries = cached.entries();
            listeners = List.copyOf(cached.listeners);
        }
        calls.succeeded();
        notify(listeners, entries);
    }

    private void watchFailed(String engineId, Throwable failure)
    {
        calls.failed("watch of engine " + engineId + " failed: " + failure);
        synchronized (lock) {
            Cached cached = cache.get(engineId);
            if (cached != null) {
                // the cache is kept and still answers; the maintenance thread restarts the watch
                cached.live = false;
            }
        }
    }

    private void notify(List<Consumer<List<DirectoryEntry>>> listeners, List<DirectoryEntry> entries)
    {
        for (Consumer<List<DirectoryEntry>> listener : listeners) {
            try {
                listener.accept(entries);
            }
            catch (RuntimeException e) {
                LOG.warn("{}: a discovery listener failed", location, e);
            }
        }
    }

    /** Renews the lease, puts again what etcd lost or never got, and restarts broken watches. */
    private void maintain()
    {
        try {
            boolean wasUnreachable;
            long lease;
            boolean publishing;
            synchronized (lock) {
                if (closed) {
                    return;
                }
                wasUnreachable = calls.unreachableSince().isPresent();
                lease = leaseId;
                publishing = !published.isEmpty();
            }
            if (lease != 0) {
                LeaseKeepAliveResponse response = calls.await(leases.keepAliveOnce(lease), "renew lease " + Long.toHexString(lease));
                if (response.getTTL() <= 0) {
                    expired(lease);
                }
            }
            else if (!publishing) {
                // nothing to renew: a cheap read keeps the health of a consumer-only directory current
                calls.await(kv.get(bytes(EtcdKeys.ROOT), GetOption.builder().withCountOnly(true).withLimit(1).build()), "probe");
            }
            republishIfNeeded();
            List<String> withdrawn;
            synchronized (lock) {
                withdrawn = List.copyOf(withdrawing);
            }
            withdrawn.forEach(this::deleteWithdrawn);
            List<String> broken = new ArrayList<>();
            synchronized (lock) {
                for (Cached cached : cache.values()) {
                    if (!cached.listeners.isEmpty() && (!cached.live || wasUnreachable)) {
                        broken.add(cached.engineId);
                    }
                }
            }
            for (String engineId : broken) {
                restartWatch(engineId);
            }
        }
        catch (KvBridgeException e) {
            if (e.getMessage().contains("requested lease not found")) {
                expired(currentLease());
            }
            LOG.debug("{}: maintenance failed: {}", location, e.getMessage());
        }
        catch (RuntimeException e) {
            LOG.warn("{}: maintenance failed", location, e);
        }
    }

    private long currentLease()
    {
        synchronized (lock) {
            return leaseId;
        }
    }

    private void expired(long lease)
    {
        synchronized (lock) {
            if (leaseId == lease) {
                leaseId = 0;
                republish = true;
            }
        }
        LOG.warn("{}: lease {} expired (etcd was out of reach for longer than leaseTtl={}): publishing every entry again under a new one",
                location, Long.toHexString(lease), config.leaseTtl());
    }

    private void republishIfNeeded()
    {
        Map<String, byte[]> entries;
        synchronized (lock) {
            if (!republish) {
                return;
            }
            republish = false;
            entries = new LinkedHashMap<>(published);
        }
        try {
            long lease = lease();
            for (Map.Entry<String, byte[]> entry : entries.entrySet()) {
                put(entry.getKey(), entry.getValue(), lease);
            }
        }
        catch (KvBridgeException e) {
            synchronized (lock) {
                republish = true;
            }
            throw e;
        }
    }

    /** Puts a published value, unless it was withdrawn meanwhile. */
    private void put(String key, byte[] value, long lease)
    {
        synchronized (lock) {
            if (published.get(key) != value) {
                return;
            }
        }
        calls.await(kv.put(bytes(key), ByteSequence.from(value), PutOption.builder().withLeaseId(lease).build()), "put " + key);
    }

    /** The directory's lease, granted on first use or after the last one expired. */
    private long lease()
    {
        synchronized (lock) {
            if (leaseId != 0) {
                return leaseId;
            }
        }
        long ttlSeconds = Math.max(1, (config.leaseTtl().toMillis() + 999) / 1000);
        long granted = calls.await(leases.grant(ttlSeconds), "grant a lease").getID();
        long revoke = 0;
        synchronized (lock) {
            if (leaseId == 0 && !closed) {
                leaseId = granted;
            }
            else {
                revoke = granted;
            }
            granted = leaseId;
        }
        if (revoke != 0) {
            leases.revoke(revoke);
        }
        KvBridgeException.check(granted != 0, ErrorCode.CLOSED, "the etcd directory %s is closed", location);
        return granted;
    }

    @Override
    public DirectoryHealth health()
    {
        synchronized (lock) {
            return new DirectoryHealth(location, calls.unreachableSince(), calls.failure(), published.size(),
                    cache.size());
        }
    }

    @Override
    public void close()
    {
        long lease;
        List<Watch.Watcher> watchers = new ArrayList<>();
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            lease = leaseId;
            leaseId = 0;
            published.clear();
            for (Cached cached : cache.values()) {
                if (cached.watcher != null) {
                    watchers.add(cached.watcher);
                }
            }
            cache.clear();
        }
        maintenance.shutdownNow();
        watchers.forEach(Watch.Watcher::close);
        if (lease != 0) {
            try {
                // revoking the lease deletes every key attached to it
                calls.await(leases.revoke(lease), "revoke lease " + Long.toHexString(lease));
            }
            catch (KvBridgeException e) {
                LOG.warn("{}: could not revoke lease {} (its entries vanish within leaseTtl={}): {}", location, Long.toHexString(lease),
                        config.leaseTtl(), e.getMessage());
            }
        }
        client.close();
    }

    private void checkOpen()
    {
        if (closed) {
            throw new KvBridgeException(ErrorCode.CLOSED, "the etcd directory " + location + " is closed");
        }
    }

    private static ByteSequence bytes(String key)
    {
        return ByteSequence.from(key, java.nio.charset.StandardCharsets.UTF_8);
    }

    @Override
    public String toString()
    {
        return "EtcdDirectory[" + location + "]";
    }
}
