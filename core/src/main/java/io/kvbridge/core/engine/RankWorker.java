package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.core.sidechannel.RemoteEngines;
import io.kvbridge.core.sidechannel.SideChannelServer;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.PeerCapability;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the producer and consumer ranks share: the rank's own transport instance with its caches
 * registered, its entry on the engine's side channel, the remote engines it shook hands with, the
 * peers and prepared lists it keeps per remote rank, and one worker thread that owns all of this
 * state. Callers hand work to the worker through a queue and return at once; handshakes run on the
 * bridge's handshake executor and hand their results back through the same queue.
 *
 * <p>The worker loop: run queued commands, drain notifications, poll posted transfers (done, failed,
 * or past their deadline), retry handle releases that failed, run the role's timers; then park
 * briefly. A transport that wakes the worker when a transfer ends or a notification arrives lets it
 * park until its next timer is due; otherwise it polls faster while work is recent.
 */
abstract class RankWorker
{
    private static final Logger LOG = LoggerFactory.getLogger(RankWorker.class);
    private static final long ACTIVE_PARK_NANOS = 50_000;
    private static final long IDLE_PARK_NANOS = 500_000;
    // after any work the worker polls at the active rate for a while: the next message of a
    // conversation (write after registration, acknowledgement after write) usually follows within it
    private static final long BUSY_WINDOW_NANOS = 5_000_000;
    private static final long EVICTION_CHECK_NANOS = 1_000_000_000L;
    // the published earliest deadline when no transfer is in flight: so far ahead it never passes
    private static final long NO_DEADLINE_AHEAD_NANOS = Long.MAX_VALUE / 4;

    final EngineServices services;
    final ConnectorSettings settings;
    final CacheGeometry geometry;
    final TransferBackend transport;
    final RemoteEngines remotes;
    final TransferMetrics metrics;
    final PlanFactory planFactory;
    final SideChannelAddress ownAddress;
    /** This incarnation of the engine's ranks served by this process's side channel (see {@link EngineServices#epoch}). */
    final long epoch;
    final boolean mixedMemory;
    final String name;
    final PeerSessions sessions;
    final PeerLinks links;
    final RequestGrants grants;

    private final SideChannelServer server;
    // this rank's entry in the discovery directory; a no-op without one
    private final AutoCloseable publication;
    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread thread;
    private volatile boolean running = true;
    private boolean shutDown;
    // whether the transport unparks the worker when a transfer ends or a notification arrives
    private boolean transportWakes;

    // worker-confined state
    final InFlightTransfers transfers;
    // built once: the worker polls and retries releases every round
    private final InFlightTransfers.Outcome outcome = new InFlightTransfers.Outcome()
    {
        @Override
        public void done(Transfer transfer)
        {
            transferDone(transfer);
        }

        @Override
        public void failed(Transfer transfer, ErrorCode code, String message)
        {
            transferFailed(transfer, code, message);
        }

        // a transport that cannot stop one transfer alone (UCX) closes its peer's endpoint for it, and a peer that failed
        // one transfer may be gone: the next request to that side channel connects afresh instead of failing on a dead peer
        @Override
        public void peerMayBeGone(Transfer transfer)
        {
            peerFailed(transfer.remote);
        }

        @Override
        public void releasedLate(Transfer transfer)
        {
            RankWorker.this.releasedLate(transfer);
        }
    };
    private long nextEvictionCheck;
    private long lastWorkNanos;
    int[] scratchA = new int[256];
    int[] scratchB = new int[256];

    // published by the worker for audits from other threads
    private volatile int auditTransfers;
    private volatile int auditRetained;
    private volatile long auditEarliestDeadline;
    // the health probe waiting in the queue, so that a stalled worker's queue does not grow with every check
    private final AtomicReference<CompletableFuture<HealthReport>> pendingProbe = new AtomicReference<>();

    RankWorker(EngineServices services, ConnectorSettings settings, String role)
    {
        this.services = requireNonNull(services, "services is null");
        this.settings = requireNonNull(settings, "settings is null");
        this.geometry = settings.geometry();
        this.planFactory = new PlanFactory(settings.cacheSpec());
        this.metrics = services.metrics();
        this.mixedMemory = mixedMemory(geometry);
        if (mixedMemory && settings.modes().contains(TransferMode.PUSH)) {
            throw new KvBridgeException(ErrorCode.UNSUPPORTED, "engine " + settings.engineId() + " rank " + geometry.rank()
                    + ": push does not support caches in mixed host and device memory (regions " + memorySummary(geometry)
                    + "); serve pull only (modes=[PULL]) or keep the cache in one kind of memory");
        }
        this.name = role + " " + settings.engineId() + " " + geometry.rank();
        this.transport = services.newTransport(role, settings);
        this.sessions = new PeerSessions(name, metrics);
        this.links = new PeerLinks(name, transport, sessions, planFactory);
        this.grants = new RequestGrants(name, transport, geometry);
        this.transfers = new InFlightTransfers(name, transport, metrics, settings.transferTimeout());
        List<Allocation> registered = new ArrayList<>();
        SideChannelServer acquired = null;
        try {
            for (Allocation allocation : geometry.allocations()) {
                transport.register(allocation);
                registered.add(allocation);
            }
            acquired = services.acquireServer(settings);
            this.epoch = services.epoch(settings.engineId());
            Set<PeerCapability> capabilities = EnumSet.noneOf(PeerCapability.class);
            for (TransferMode mode : settings.modes()) {
                capabilities.add(mode == TransferMode.PUSH ? PeerCapability.PUSH : PeerCapability.PULL);
            }
            RankMetadata metadata = new RankMetadata(settings.engineId(), epoch, transport.name(), transport.localMetadata(), capabilities, geometry);
            acquired.publish(metadata, sessions::established);
            this.ownAddress = new SideChannelAddress(settings.advertisedHost(), acquired.address().getPort());
            HandshakeVerifier verifier = new HandshakeVerifier(geometry.model(), services.sideChannelSettings().compatibility(),
                    services.sideChannelSettings().limits());
            // every handshake opens a notification session with the ranks fetched: what this rank sends them is sealed with it
            this.remotes = new RemoteEngines(services.client(), verifier, capabilities, services.sideChannelSettings().engineTtl(), services.clock(),
                    services.handshakes(), this::evicted, transport.agentName(), services.discovery());
            this.publication = services.discovery().publish(ownAddress.host(), ownAddress.port(), metadata);
        }
        catch (RuntimeException e) {
            if (acquired != null) {
                acquired.withdraw(RankKey.of(geometry.rank()));
                services.releaseServer(settings.engineId());
            }
            for (Allocation allocation : registered) {
                transport.deregister(allocation);
            }
            transport.close();
            throw e;
        }
        this.server = acquired;
        this.nextEvictionCheck = services.clock().monotonicNanos() + EVICTION_CHECK_NANOS;
        this.auditEarliestDeadline = nextEvictionCheck + NO_DEADLINE_AHEAD_NANOS;
        this.thread = Thread.ofPlatform().daemon().name("kvbridge-" + role + "-" + settings.engineId() + "-pp" + geometry.rank().ppRank() + "-tp"
                + geometry.rank().tpRank()).unstarted(this::loop);
        services.opened(this);
    }

    /** Starts the worker; called by the subclass once its own fields are set, unless the rank is stepped by hand. */
    final void start(boolean startWorker)
    {
        if (startWorker) {
            transportWakes = transport.wakeOnProgress(thread);
            thread.start();
        }
    }

    private static boolean mixedMemory(CacheGeometry geometry)
    {
        Region first = geometry.regions().getFirst();
        for (Region region : geometry.regions()) {
            if (region.memoryKind() != first.memoryKind() || region.device() != first.device()) {
                return true;
            }
        }
        return false;
    }

    private static String memorySummary(CacheGeometry geometry)
    {
        List<String> kinds = new ArrayList<>();
        for (Region region : geometry.regions()) {
            String kind = region.name() + "=" + region.memoryKind() + "/" + region.device();
            if (kinds.size() < 4) {
                kinds.add(kind);
            }
        }
        return kinds + (geometry.regions().size() > 4 ? " ..." : "");
    }

    final void checkOpen()
    {
        if (closed.get()) {
            throw new KvBridgeException(ErrorCode.CLOSED, name + " is closed");
        }
    }

    /** Hands work to the worker thread. */
    final void enqueue(Runnable command)
    {
        commands.add(command);
        LockSupport.unpark(thread);
    }

    /**
     * Shakes hands through {@link RemoteEngines#handshake}, timing it when it was not answered from
     * the cache; a cached engine of another epoch than expected does not answer.
     */
    final CompletableFuture<RemoteEngine> handshake(RemoteKey key, Collection<RankKey> ranks, long expectedEpoch)
    {
        // asked before: a handshake on loopback can complete before its future is looked at, so being done says nothing
        boolean answeredFromCache = remotes.answersFromCache(key.cacheKey(), ranks, expectedEpoch);
        long started = now();
        CompletableFuture<RemoteEngine> future = remotes.handshake(key.cacheKey(), key.engineId(), key.socketAddress(), ranks, expectedEpoch);
        if (!answeredFromCache) {
            future.whenComplete((engine, failure) -> metrics.handshakeDone(now() - started, failure == null));
        }
        return future;
    }

    final long now()
    {
        return services.clock().monotonicNanos();
    }

    private void loop()
    {
        while (running) {
            boolean worked = step();
            long now = System.nanoTime();
            if (worked || !transfers.isEmpty()) {
                lastWorkNanos = now;
            }
            // a transport that wakes the worker needs no fast polling; the idle rate still drives the timers
            boolean pollFast = !transportWakes && now - lastWorkNanos < BUSY_WINDOW_NANOS;
            LockSupport.parkNanos(transportWakes ? wokenParkNanos() : pollFast ? ACTIVE_PARK_NANOS : IDLE_PARK_NANOS);
        }
        shutdown();
    }

    /** How long a worker whose transport wakes it parks: until its earliest timer is due ({@link WokenPark}). */
    private long wokenParkNanos()
    {
        return WokenPark.nanos(now(), auditRetained > 0, nextTimerNanos(), auditEarliestDeadline, nextEvictionCheck, ACTIVE_PARK_NANOS);
    }

    /**
     * Runs one round of the worker: queued commands, notifications, transfers, released handles,
     * timers. The worker thread calls it in a loop; a rank built without its thread (tests) is
     * stepped by hand, so that every interleaving of clock, notifications and commands is chosen.
     *
     * @return whether a command or a notification was handled.
     */
    final boolean step()
    {
        boolean worked = false;
        try {
            worked = runCommands();
            worked |= transport.drainNotifications(this::received) > 0;
            long now = now();
            transfers.poll(now, outcome);
            transfers.retryReleases(outcome);
            tick(now);
            if (now - nextEvictionCheck >= 0) {
                nextEvictionCheck = now + EVICTION_CHECK_NANOS;
                remotes.evictIdle();
            }
            auditTransfers = transfers.size();
            auditRetained = transfers.retainedCount();
            auditEarliestDeadline = transfers.earliestDeadline(now + NO_DEADLINE_AHEAD_NANOS);
            publishAudit();
        }
        catch (RuntimeException e) {
            LOG.error("{}: worker step failed; continuing", name, e);
        }
        return worked;
    }

    /** Runs every queued command; also called when a notification may refer to work a caller has queued but the worker not yet seen. */
    final boolean runCommands()
    {
        boolean ran = false;
        Runnable command;
        while ((command = commands.poll()) != null) {
            command.run();
            ran = true;
        }
        return ran;
    }

    private void received(String sender, byte[] message)
    {
        try {
            // only what a peer met at a handshake sealed reaches the role; the rest is counted and dropped
            byte[] opened = sessions.open(sender, message);
            if (opened != null) {
                onNotification(sender, opened);
            }
        }
        catch (RuntimeException e) {
            LOG.warn("{}: dropped a notification from {} that could not be handled: {}", name, sender, e.toString());
        }
    }

    /** Cancels every in-flight transfer of an owner (no data is moved after this). */
    final void cancelTransfers(Object owner)
    {
        transfers.cancel(owner, outcome);
    }

    /**
     * A peer of a remote engine failed: the engine's links are closed once this round is over, and the next handshake asks the side channel again, so that a restarted engine is met
     * with its new epoch (and its old memory registrations are never used) instead of through the
     * cached metadata of the incarnation that is gone.
     */
    final void peerFailed(RemoteKey remote)
    {
        remotes.revalidate(remote.cacheKey());
        enqueue(() -> links.close(remote));
    }

    final boolean hasTransfers(Object owner)
    {
        return transfers.holds(owner);
    }

    /**
     * Posts a transfer and tracks it; the post's own failure propagates. Its deadline is
     * {@code transferTimeout}, or the producer's lease when that is shorter: past the lease the
     * producer frees the blocks anyway, so a transfer still moving then is stuck on its peer. The
     * peer's grant key goes with it ({@link RequestGrants}); the notification is sealed with the link's session.
     */
    final Transfer post(Object owner, TransferOp op, PeerLink link, PeerLink.Prepared local, int[] localIndices, PeerLink.Prepared remote,
            int[] remoteIndices, int count, byte[] notification, byte[] grantKey, long leaseNanos)
    {
        long bytes = 0;
        DescriptorList localDescriptors = local.descriptors();
        for (int i = 0; i < count; i++) {
            bytes += localDescriptors.length(localIndices[i]);
        }
        RemoteEngines.InFlight mark = remotes.markInFlight(link.remote().cacheKey());
        long start = now();
        long handle;
        try {
            byte[] sealed = notification == null ? null : link.seal(notification);
            handle = transport.post(op, local.list(), localIndices, remote.list(), remoteIndices, count, sealed, grantKey);
        }
        catch (RuntimeException e) {
            mark.close();
            throw e;
        }
        long posted = now();
        long limit = Math.min(settings.transferTimeout().toNanos(), leaseNanos);
        Transfer transfer = new Transfer(handle, owner, start, posted - start, posted + limit, bytes, count,
                operationsOf(handle, count), mark, link.remote());
        transfers.add(transfer);
        return transfer;
    }

    /** The operations the transport issued for a transfer, or its pair count when the transport does not say. */
    private int operationsOf(long handle, int pairs)
    {
        int operations;
        try {
            operations = transport.operations(handle);
        }
        catch (KvBridgeException e) {
            // a metric must not lose a posted transfer: it is tracked, and counted as one operation per pair
            operations = -1;
        }
        return operations < 0 ? pairs : operations;
    }

    final void ensureScratch(int size)
    {
        if (scratchA.length < size) {
            int grown = Math.max(size, scratchA.length * 2);
            scratchA = new int[grown];
            scratchB = new int[grown];
        }
    }

    static InetSocketAddress socketAddress(SideChannelAddress address)
    {
        return new InetSocketAddress(address.host(), address.port());
    }

    private void evicted(RemoteEngine engine)
    {
        // the evicted (or restarted) engine's links and plans go with it
        RemoteKey key = RemoteKey.of(engine);
        enqueue(() -> links.close(key));
    }

    /** Sends a notification without data; a failure is counted and logged, never thrown. */
    final boolean notifyQuietly(PeerLink link, byte[] message, String what)
    {
        try {
            transport.notify(link.peer(), link.seal(message));
            return true;
        }
        catch (RuntimeException e) {
            metrics.notificationFailed();
            LOG.warn("{}: could not send {} to {}: {}", name, what, link.agent(), e.getMessage());
            return false;
        }
    }

    final ConnectorAudit baseAudit(int requests, int leases, int stashed)
    {
        return new ConnectorAudit(requests, auditTransfers, leases, stashed, auditRetained, grants.live(), transport.resources());
    }

    /**
     * What the worker tells a health probe, read on the worker thread.
     *
     * @param retainedHandles handles whose release failed and is retried.
     * @param retainedHandleIds the first few of them, in hex.
     * @param oldestRetainedAgeNanos how long ago the oldest of them was posted; 0 when none.
     * @param answeredAtNanos {@link System#nanoTime()} when the worker answered.
     */
    record HealthReport(int retainedHandles, String retainedHandleIds, long oldestRetainedAgeNanos, long answeredAtNanos)
    {
    }

    /**
     * Asks the worker, through its queue, for a {@link HealthReport}: the answer arriving is itself
     * the proof that the loop runs. While an earlier probe is unanswered, returns that one.
     *
     * @return completed by the worker when it runs the probe.
     */
    final CompletableFuture<HealthReport> probe()
    {
        CompletableFuture<HealthReport> fresh = new CompletableFuture<>();
        CompletableFuture<HealthReport> pending = pendingProbe.compareAndExchange(null, fresh);
        if (pending != null) {
            return pending;
        }
        enqueue(() -> {
            pendingProbe.set(null);
            fresh.complete(transfers.retainedReport(now()));
        });
        return fresh;
    }

    /** @return the worker thread, for health checks. */
    final Thread workerThread()
    {
        return thread;
    }

    /** @return whether {@link #close()} was called. */
    final boolean isClosed()
    {
        return closed.get();
    }

    /** @return in-flight transfers as of the worker's last round. */
    final int inFlightTransfers()
    {
        return auditTransfers;
    }

    /** @return retained handles as of the worker's last round. */
    final int retainedHandles()
    {
        return auditRetained;
    }

    /** @return the earliest deadline of the transfers in flight as of the worker's last round; far ahead when none. */
    final long earliestDeadlineNanos()
    {
        return auditEarliestDeadline;
    }

    /** Counts what the rank holds. */
    abstract ConnectorAudit audit();

    abstract void onNotification(String sender, byte[] message);

    abstract void transferDone(Transfer transfer);

    abstract void transferFailed(Transfer transfer, ErrorCode code, String message);

    /** A transfer whose release failed earlier was released now. */
    abstract void releasedLate(Transfer transfer);

    abstract void tick(long now);

    /** {@return when {@link #tick} next has something to do, on the services' clock; Long.MAX_VALUE for nothing} */
    abstract long nextTimerNanos();

    abstract void publishAudit();

    /** Stops the worker, releases everything and closes the transport. Idempotent. */
    public final void close()
    {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        running = false;
        LockSupport.unpark(thread);
        if (thread.getState() != Thread.State.NEW) {
            try {
                thread.join(10_000);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        // the worker shuts down on its way out; a rank stepped by hand (or a worker that died) is shut down here
        shutdown();
        services.closed(this);
    }

    private synchronized void shutdown()
    {
        if (shutDown) {
            return;
        }
        shutDown = true;
        int stillRetained = transfers.releaseAll(outcome);
        if (stillRetained > 0) {
            LOG.warn("{}: {} transfer handles could not be released before closing; the transport's close releases them", name, stillRetained);
        }
        links.closeAll();
        // out of the directory first, so that consumers stop finding a rank about to go
        try {
            publication.close();
        }
        catch (Exception e) {
            LOG.warn("{}: withdrawing the discovery entry failed: {}", name, e.toString());
        }
        server.withdraw(RankKey.of(geometry.rank()));
        services.releaseServer(settings.engineId());
        for (Allocation allocation : geometry.allocations()) {
            try {
                transport.deregister(allocation);
            }
            catch (RuntimeException e) {
                LOG.debug("{}: deregistering {} failed: {}", name, allocation, e.toString());
            }
        }
        transport.close();
        auditTransfers = 0;
        auditRetained = 0;
    }
}
