package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.core.sidechannel.RemoteEngines;
import io.kvbridge.core.sidechannel.ServedRole;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the producer and consumer ranks share, handed to each as a part rather than inherited: the
 * rank's {@link RankEndpoint} (transport, side channel entry, epoch), its {@link RankPeers} (the
 * remote engines it shook hands with and its links to their ranks), its grants, the clock, the
 * table of transfers in flight, and one worker thread that owns all of this state and calls the
 * role back ({@link RankRole}). Callers hand work to the worker through a queue and return at once;
 * handshakes run on the bridge's handshake executor and hand their results back through the same
 * queue.
 *
 * <p>The worker loop: run queued commands, drain notifications, poll posted transfers (done, failed,
 * or past their deadline), retry handle releases that failed, run the role's timers; then park
 * briefly. A transport that wakes the worker when a transfer ends or a notification arrives lets it
 * park until its next timer is due; otherwise it polls faster while work is recent.
 */
final class RankRuntime implements OpenRank
{
    private static final Logger LOG = LoggerFactory.getLogger(RankRuntime.class);
    private static final long ACTIVE_PARK_NANOS = 50_000;
    private static final long IDLE_PARK_NANOS = 500_000;
    // after any work the worker polls at the active rate for a while: the next message of a
    // conversation (write after registration, acknowledgement after write) usually follows within it
    private static final long BUSY_WINDOW_NANOS = 5_000_000;
    private static final long EVICTION_CHECK_NANOS = 1_000_000_000L;
    // the published earliest deadline when no transfer is in flight: so far ahead it never passes
    private static final long NO_DEADLINE_AHEAD_NANOS = Long.MAX_VALUE / 4;

    private final EngineServices services;
    private final ConnectorSettings settings;
    private final String name;
    private final RankRole role;
    private final TransferMetrics metrics;
    private final RequestGrants grants;
    private final RankEndpoint endpoint;
    private final RankPeers peers;
    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread thread;
    private volatile boolean running = true;
    private boolean shutDown;
    // whether the transport unparks the worker when a transfer ends or a notification arrives
    private boolean transportWakes;

    // worker-confined state
    private final InFlightTransfers transfers;
    private final TransferOutcomes outcome;
    // refilled for every post: the transport reads it during the call only
    private final TransferRequest posting = new TransferRequest();
    // made once: a method reference written in step() would be a new object on every step
    private final NotificationSink notifications = this::received;
    private long nextEvictionCheck;
    private long lastWorkNanos;

    // published by the worker for audits from other threads
    private volatile int auditTransfers;
    private volatile int auditRetained;
    private volatile int auditLingering;
    private volatile long auditEarliestDeadline;
    // the health probe waiting in the queue, so that a stalled worker's queue does not grow with every check
    private final AtomicReference<CompletableFuture<HealthReport>> pendingProbe = new AtomicReference<>();

    /**
     * Creates the rank's transport, registers its caches and publishes it; the worker starts with
     * {@link #start}, once the role is ready to be called.
     *
     * @param served the rank's role, under which the engine's side channel serves it.
     * @param role called back on the worker thread; not called before {@link #start}.
     */
    RankRuntime(EngineServices services, ConnectorSettings settings, ServedRole served, RankRole role)
    {
        String roleName = served.wireName();
        this.services = requireNonNull(services, "services is null");
        this.settings = requireNonNull(settings, "settings is null");
        this.role = requireNonNull(role, "role is null");
        this.metrics = services.metrics();
        RankEndpoint.checkMemory(settings);
        CacheGeometry geometry = settings.geometry();
        this.name = roleName + " " + settings.engineId() + " " + geometry.rank();
        TransferBackend transport = services.newTransport(roleName, settings);
        PeerSessions sessions = new PeerSessions(name, metrics);
        this.grants = new RequestGrants(name, transport, geometry);
        this.transfers = new InFlightTransfers(name, transport, metrics, settings.transferTimeout());
        this.endpoint = RankEndpoint.open(name, services, settings, served, transport, sessions::established);
        try {
            this.peers = new RankPeers(name, services, settings, served.peer(), transport, sessions, endpoint.capabilities(), this::enqueue);
        }
        catch (RuntimeException e) {
            endpoint.close();
            throw e;
        }
        this.outcome = new TransferOutcomes(role, peers);
        this.nextEvictionCheck = services.clock().monotonicNanos() + EVICTION_CHECK_NANOS;
        this.auditEarliestDeadline = nextEvictionCheck + NO_DEADLINE_AHEAD_NANOS;
        this.thread = Thread.ofPlatform().daemon().name("kvbridge-" + roleName + "-" + settings.engineId() + "-pp" + geometry.rank().ppRank() + "-tp"
                + geometry.rank().tpRank()).unstarted(this::loop);
        services.opened(this);
    }

    /** Starts the worker, unless the rank is stepped by hand; called by the role once its own fields are set. */
    void start(boolean startWorker)
    {
        if (startWorker) {
            transportWakes = endpoint.transport().wakeOnProgress(thread);
            thread.start();
        }
    }

    @Override
    public String name()
    {
        return name;
    }

    ConnectorSettings settings()
    {
        return settings;
    }

    @Override
    public TransferBackend transport()
    {
        return endpoint.transport();
    }

    /** {@return this incarnation of the engine's ranks served by this process's side channel (see {@link EngineServices#epoch})} */
    long epoch()
    {
        return endpoint.epoch();
    }

    SideChannelAddress ownAddress()
    {
        return endpoint.ownAddress();
    }

    EngineServices services()
    {
        return services;
    }

    TransferMetrics metrics()
    {
        return metrics;
    }

    RankPeers peers()
    {
        return peers;
    }

    RequestGrants grants()
    {
        return grants;
    }

    void checkOpen()
    {
        if (closed.get()) {
            throw new KvBridgeException(ErrorCode.CLOSED, name + " is closed");
        }
    }

    /** Hands work to the worker thread. */
    void enqueue(Runnable command)
    {
        commands.add(command);
        LockSupport.unpark(thread);
    }

    /** Wakes the worker without queueing anything: a caller set a flag the worker reads on its next step. */
    void wake()
    {
        LockSupport.unpark(thread);
    }

    @Override
    public long now()
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
        return WokenPark.nanos(now(), auditRetained > 0 || auditLingering > 0, role.nextTimerNanos(), auditEarliestDeadline, nextEvictionCheck, ACTIVE_PARK_NANOS);
    }

    /**
     * Runs one round of the worker: queued commands, notifications, transfers, released handles,
     * timers. The worker thread calls it in a loop; a rank built without its thread (tests) is
     * stepped by hand, so that every interleaving of clock, notifications and commands is chosen.
     *
     * @return whether a command or a notification was handled.
     */
    boolean step()
    {
        boolean worked = false;
        try {
            worked = runCommands();
            worked |= endpoint.transport().drainNotifications(notifications) > 0;
            long now = now();
            transfers.poll(now, outcome);
            transfers.retryReleases(outcome);
            role.tick(now);
            if (now - nextEvictionCheck >= 0) {
                nextEvictionCheck = now + EVICTION_CHECK_NANOS;
                peers.remotes().evictIdle();
            }
            auditTransfers = transfers.size();
            auditRetained = transfers.retainedCount();
            auditLingering = transfers.lingeringCount();
            auditEarliestDeadline = transfers.earliestDeadline(now + NO_DEADLINE_AHEAD_NANOS);
            role.publishAudit();
        }
        catch (RuntimeException e) {
            LOG.error("{}: worker step failed; continuing", name, e);
        }
        return worked;
    }

    /** Runs every queued command; also called when a notification may refer to work a caller has queued but the worker not yet seen. */
    boolean runCommands()
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
            byte[] opened = peers.sessions().open(sender, message);
            if (opened != null) {
                role.onNotification(sender, opened);
            }
        }
        catch (RuntimeException e) {
            LOG.warn("{}: dropped a notification from {} that could not be handled: {}", name, sender, e.toString());
        }
    }

    /** Cancels every in-flight transfer of an owner (no data is moved after this). */
    void cancelTransfers(Object owner)
    {
        transfers.cancel(owner, outcome);
    }

    /** {@return the cache groups the in-flight transfers of an owner write (see {@link InFlightTransfers#groupsWritten})} */
    long groupsInFlight(Object owner)
    {
        return transfers.groupsWritten(owner);
    }

    boolean hasTransfers(Object owner)
    {
        return transfers.holds(owner);
    }

    /** {@return whether a transfer of an owner lingers (see {@link InFlightTransfers#lingers})} */
    boolean lingers(Object owner)
    {
        return transfers.lingers(owner);
    }

    /** {@return the cache groups the lingering transfers of an owner write} */
    long groupsLingering(Object owner)
    {
        return transfers.groupsLingering(owner);
    }

    /**
     * Posts a transfer over a link and tracks it; the post's own failure propagates. {@code local}
     * is this rank's memory, {@code remote} the link's remote rank's. Its deadline is
     * {@code transferTimeout}, or the producer's lease when that is shorter: past the lease the
     * producer frees the blocks anyway, so a transfer still moving then is stuck on its peer. The
     * peer's grant key goes with it ({@link RequestGrants}); the notification is sealed with the link's session.
     */
    Transfer post(Object owner, TransferOp op, PeerLink link, PeerLink.Prepared local, int[] localIndices, PeerLink.Prepared remote,
            int[] remoteIndices, int count, byte[] notification, byte[] grantKey, long leaseNanos)
    {
        long bytes = 0;
        DescriptorList localDescriptors = local.descriptors();
        for (int i = 0; i < count; i++) {
            bytes += localDescriptors.length(localIndices[i]);
        }
        RemoteEngines.InFlight mark = peers.markInFlight(link);
        long start = now();
        long handle;
        try {
            byte[] sealed = notification == null ? null : link.seal(notification);
            handle = endpoint.transport().post(posting.start(op).local(local.list(), localIndices).remote(remote.list(), remoteIndices).count(count)
                    .notification(sealed).grantKey(grantKey));
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
            operations = endpoint.transport().operations(handle);
        }
        catch (KvBridgeException e) {
            // a metric must not lose a posted transfer: it is tracked, and counted as one operation per pair
            operations = -1;
        }
        return operations < 0 ? pairs : operations;
    }

    static InetSocketAddress socketAddress(SideChannelAddress address)
    {
        return new InetSocketAddress(address.host(), address.port());
    }

    ConnectorAudit baseAudit(int requests, int leases, int stashed)
    {
        return baseAudit(requests, leases, stashed, 0);
    }

    ConnectorAudit baseAudit(int requests, int leases, int stashed, int quarantined)
    {
        return new ConnectorAudit(requests, auditTransfers, leases, stashed, auditRetained, grants.live(), endpoint.transport().resources(), quarantined);
    }

    @Override
    public ConnectorAudit audit()
    {
        return role.audit();
    }

    /**
     * Asks the worker, through its queue, for a {@link HealthReport}: the answer arriving is itself
     * the proof that the loop runs. While an earlier probe is unanswered, returns that one; a worker
     * that does not run would never take it from its queue, so it gets one that never completes.
     */
    @Override
    public CompletableFuture<HealthReport> probe()
    {
        if (!thread.isAlive()) {
            return new CompletableFuture<>();
        }
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

    @Override
    public Thread workerThread()
    {
        return thread;
    }

    @Override
    public Duration transferTimeout()
    {
        return settings.transferTimeout();
    }

    @Override
    public boolean isClosed()
    {
        return closed.get();
    }

    @Override
    public int inFlightTransfers()
    {
        return auditTransfers;
    }

    @Override
    public int retainedHandles()
    {
        return auditRetained;
    }

    @Override
    public long earliestDeadlineNanos()
    {
        return auditEarliestDeadline;
    }

    /** Stops the worker, releases everything and closes the transport. Idempotent. */
    @Override
    public void close()
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
        peers.links().closeAll();
        endpoint.close();
        auditTransfers = 0;
        auditRetained = 0;
        auditLingering = 0;
    }
}
