package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.nixl.ffm.Nixl;
import io.kvbridge.backend.nixl.ffm.NixlAgent;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PostArguments;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferStatus;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * The NIXL transport: one NIXL agent with a UCX backend per instance, driven through NIXL's C API.
 *
 * <p><b>Owner thread.</b> NIXL's default agent takes no lock, so every native call of an instance
 * runs on its owner thread. Callers hand work over and park until it is done; a post waits for
 * NIXL to accept the request, never for data. Between pieces of work the owner polls every running
 * request until NIXL reports it complete: with UCX the notification attached to a transfer leaves
 * only when the initiator sees the data in place, so polling to completion is what delivers it.
 * A finished request is released and destroyed at once; its outcome stays in the slot until the
 * user releases the handle.
 *
 * <p><b>Checks.</b> Indices, lengths and descriptor ranges are checked against Java copies of the
 * prepared lists, registrations and the peer's announced allocations before NIXL sees them, so bad
 * input gets a precise error and NIXL never sees an out-of-range index.
 *
 * <p><b>Operations.</b> A request names prepared-list indices and NIXL's backend decides how many
 * operations it issues for them, so this transport cannot merge contiguous pairs and does not claim
 * {@link io.kvbridge.spi.transfer.Capability#COALESCING}. {@link #operations} keeps the default and
 * reports {@code -1} (not known) rather than the pair count, which would pass a number nothing
 * measured for one the library chose; the engine records the pair count in its place.
 */
final class NixlTransferBackend implements TransferBackend
{
    static final int MAX_NOTIFICATION_BYTES = 1 << 20;

    private static final System.Logger LOG = System.getLogger(NixlTransferBackend.class.getName());
    // an idle owner spins this long before it blocks: new work then starts without a wake-up
    private static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    // while requests run the owner polls at least this often
    private static final long POLL_INTERVAL_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    private static final long IDLE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long CLOSE_CANCEL_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final String agentName;
    private final int maxInFlight;
    private final Thread owner;
    private final OwnerQueue queue;
    // held by whoever fails the work left in the queue once the owner has stopped
    private final Object terminationLock = new Object();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean terminated;
    // why the owner thread left its loop, when it was not asked to
    private volatile Throwable ownerFailure;
    // set while the owner parks for lack of work; producers unpark it after queueing
    private volatile boolean ownerParked;
    private final ConcurrentLinkedQueue<Received> inbox = new ConcurrentLinkedQueue<>();

    // owner-confined state; other threads read the volatile snapshots and counts
    private NixlAgent agent;
    private boolean stopRequested;
    private volatile NixlRegistration[] registrations = new NixlRegistration[0];
    private final List<NixlPreparedList> preparedLists = new ArrayList<>();
    private volatile int preparedCount;
    private final Map<String, NixlPeer> peers = new HashMap<>();
    private volatile int peerCount;
    private NixlTransfer[] running = new NixlTransfer[64];
    private int runningCount;

    private final Object slotLock = new Object();
    private NixlTransfer[] slots = new NixlTransfer[64];
    private int slotCount;
    private int[] freeSlots = new int[64];
    private int freeCount;
    private int inFlight;

    private record Received(String sender, byte[] message)
    {
    }

    /** A cold-path call run on the owner thread. */
    private static final class Call<T> extends OwnerWork
    {
        private final Supplier<T> action;
        private T result;

        Call(Supplier<T> action)
        {
            this.action = action;
        }

        @Override
        void runOnOwner()
        {
            result = action.get();
        }
    }

    /**
     * Starts the owner thread and opens the NIXL agent on it.
     *
     * @param library the {@code libnixl_capi.so} to use.
     * @param agentName the agent name, unique among peers.
     * @param progressThread whether NIXL runs its own progress thread.
     * @param maxInFlight most posted transfers whose handles are not released.
     */
    NixlTransferBackend(Path library, String agentName, boolean progressThread, int maxInFlight)
    {
        this.agentName = requireNonNull(agentName, "agentName is null");
        this.maxInFlight = maxInFlight;
        this.queue = new OwnerQueue(maxInFlight + 1024);
        this.owner = Thread.ofPlatform().daemon().name("kvbridge-nixl-" + agentName).unstarted(this::ownerLoop);
        owner.start();
        try {
            onOwner(() -> {
                agent = Nixl.openAgent(library, agentName, progressThread);
                return null;
            });
        }
        catch (RuntimeException e) {
            closed.set(true);
            stopOwner(e);
            throw e;
        }
    }

    @Override
    public String name()
    {
        return NixlBackendFactory.NAME;
    }

    @Override
    public String agentName()
    {
        return agentName;
    }

    // ---------------------------------------------------------------- owner thread

    private void ownerLoop()
    {
        try {
            long idleSince = 0;
            while (!stopRequested) {
                boolean progressed = false;
                OwnerWork work;
                // bounded, so a stream of calls never starves the polling of running requests
                for (int i = 0; i < 64 && !stopRequested && (work = queue.poll()) != null; i++) {
                    run(work);
                    progressed = true;
                }
                if (stopRequested) {
                    break;
                }
                if (runningCount > 0) {
                    progressed |= pollRunning();
                }
                if (progressed) {
                    idleSince = 0;
                    continue;
                }
                long now = System.nanoTime();
                if (idleSince == 0) {
                    idleSince = now;
                }
                if (now - idleSince < SPIN_NANOS) {
                    Thread.onSpinWait();
                    continue;
                }
                // parked rather than blocked in the queue: a timed queue wait allocates on every call
                ownerParked = true;
                if (queue.isEmpty()) {
                    LockSupport.parkNanos(this, runningCount > 0 ? POLL_INTERVAL_NANOS : IDLE_WAIT_NANOS);
                }
                ownerParked = false;
            }
        }
        catch (RuntimeException | Error e) {
            ownerFailure = e;
            LOG.log(System.Logger.Level.ERROR, "owner thread of nixl transport '" + agentName + "' failed; the transport stops", e);
        }
        finally {
            if (agent != null) {
                try {
                    shutdownNative();
                }
                catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "closing NIXL agent '" + agentName + "' failed", e);
                }
            }
            synchronized (terminationLock) {
                terminated = true;
                failLeftOverWork();
            }
        }
    }

    /** Fails what is queued once the owner has stopped; the caller holds the termination lock. */
    private void failLeftOverWork()
    {
        OwnerWork left;
        while ((left = queue.poll()) != null) {
            left.fail(closedException());
            left.complete();
        }
    }

    private static void run(OwnerWork work)
    {
        try {
            work.runOnOwner();
        }
        catch (RuntimeException e) {
            work.fail(e);
        }
        catch (Error e) {
            work.fail(new KvBridgeException(ErrorCode.NATIVE_ERROR, "the owner thread failed: " + e, e));
            throw e;
        }
        finally {
            work.complete();
        }
    }

    /** Hands work to the owner thread and waits for it. */
    private void execute(OwnerWork work)
    {
        if (Thread.currentThread() == owner) {
            throw new IllegalStateException("the owner thread of nixl transport '" + agentName + "' waited for itself");
        }
        work.prepare(Thread.currentThread());
        if (terminated) {
            throw closedException();
        }
        while (!queue.offer(work)) {
            // full: max-in-flight posts plus a thousand calls are already waiting
            LockSupport.unpark(owner);
            Thread.yield();
            if (terminated) {
                throw closedException();
            }
        }
        if (ownerParked) {
            LockSupport.unpark(owner);
        }
        if (terminated) {
            // the owner stopped and drained: fail what was queued after its drain, this work included
            synchronized (terminationLock) {
                failLeftOverWork();
            }
        }
        work.await();
    }

    private <T> T onOwner(Supplier<T> action)
    {
        Call<T> call = new Call<>(action);
        execute(call);
        return call.result;
    }

    private void stopOwner(RuntimeException cause)
    {
        try {
            onOwner(() -> {
                stopRequested = true;
                return null;
            });
        }
        catch (KvBridgeException ignored) {
            // already stopped
        }
        try {
            owner.join(TimeUnit.NANOSECONDS.toMillis(CLOSE_CANCEL_NANOS) + 5_000);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (cause != null) {
                cause.addSuppressed(e);
            }
        }
    }

    // ---------------------------------------------------------------- registrations

    @Override
    public void register(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        checkOpen();
        onOwner(() -> {
            checkOpen();
            NixlRegistration[] current = registrations;
            for (NixlRegistration registration : current) {
                if (registration.allocation.overlaps(allocation)) {
                    throw new KvBridgeException(ErrorCode.ALREADY_REGISTERED, allocation + " overlaps registered " + registration.allocation
                            + "; register each physical range once");
                }
            }
            agent.registerMemory(allocation.kind(), allocation.device(), allocation.address(), allocation.bytes());
            NixlRegistration[] next = Arrays.copyOf(current, current.length + 1);
            next[current.length] = new NixlRegistration(allocation);
            Arrays.sort(next, (a, b) -> Long.compare(a.allocation.address(), b.allocation.address()));
            registrations = next;
            return null;
        });
    }

    @Override
    public void deregister(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        checkOpen();
        onOwner(() -> {
            checkOpen();
            NixlRegistration[] current = registrations;
            int index = -1;
            for (int i = 0; i < current.length; i++) {
                if (current[i].allocation.equals(allocation)) {
                    index = i;
                }
            }
            if (index < 0) {
                throw new KvBridgeException(ErrorCode.NOT_REGISTERED, allocation + " is not registered with nixl transport '" + agentName
                        + "'; deregister exactly what register() was given");
            }
            NixlRegistration registration = current[index];
            int touching = 0;
            for (int i = 0; i < runningCount; i++) {
                if (uses(running[i], registration)) {
                    touching++;
                }
            }
            if (touching > 0) {
                throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, touching + " running transfer(s) still move bytes of " + allocation
                        + "; wait until they are terminal, or release them, before deregistering");
            }
            agent.deregisterMemory(allocation.kind(), allocation.device(), allocation.address(), allocation.bytes());
            registration.live = false;
            // NIXL must not use a prepared list over memory that is gone: release their handles now
            for (NixlPreparedList list : preparedLists) {
                if (list.handle != 0 && Arrays.asList(list.registrations).contains(registration)) {
                    releaseHandle(list);
                }
            }
            NixlRegistration[] next = new NixlRegistration[current.length - 1];
            System.arraycopy(current, 0, next, 0, index);
            System.arraycopy(current, index + 1, next, index, current.length - index - 1);
            registrations = next;
            return null;
        });
    }

    private static boolean uses(NixlTransfer transfer, NixlRegistration registration)
    {
        return transfer.localList != null && Arrays.asList(transfer.localList.registrations).contains(registration);
    }

    // ---------------------------------------------------------------- metadata and peers

    @Override
    public byte[] localMetadata()
    {
        checkOpen();
        return onOwner(() -> {
            checkOpen();
            byte[] blob = agent.localMetadata();
            List<Allocation> allocations = new ArrayList<>();
            for (NixlRegistration registration : registrations) {
                allocations.add(registration.allocation);
            }
            return new NixlMetadata(agentName, RegionTable.of(allocations), blob).encode();
        });
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        checkOpen();
        NixlMetadata metadata = NixlMetadata.decode(peerMetadata);
        if (metadata.agentName().equals(agentName)) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "the metadata is this instance's own (agent name=" + agentName
                    + "); connect to another instance");
        }
        return onOwner(() -> {
            checkOpen();
            NixlPeer known = peers.get(metadata.agentName());
            String loaded;
            try {
                loaded = agent.loadRemoteMetadata(metadata.blob());
            }
            catch (KvBridgeException e) {
                if (known != null) {
                    throw new KvBridgeException(e.code(), "refreshing peer '" + known.name() + "' failed; if it restarted, disconnect() it and connect "
                            + "again: " + e.getMessage(), e);
                }
                throw e;
            }
            if (!loaded.equals(metadata.agentName())) {
                if (!peers.containsKey(loaded)) {
                    agent.invalidateRemoteMetadata(loaded);
                }
                throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "the metadata names agent '" + metadata.agentName()
                        + "' but its NIXL blob belongs to agent '" + loaded + "'; it was tampered with or assembled wrongly");
            }
            if (known != null) {
                known.regions = metadata.regions();
                return known;
            }
            NixlPeer peer = new NixlPeer(this, loaded, metadata.regions());
            peers.put(loaded, peer);
            peerCount = peers.size();
            return peer;
        });
    }

    @Override
    public void disconnect(Peer peer)
    {
        NixlPeer nixlPeer = ownPeer(peer);
        if (closed.get()) {
            // close() already disconnected every peer
            return;
        }
        onOwner(() -> {
            checkOpen();
            if (nixlPeer.connected) {
                forget(nixlPeer, new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + nixlPeer.name() + "' was disconnected while the transfer ran"));
            }
            return null;
        });
    }

    /** Fails the peer's running transfers, releases its lists, then lets NIXL forget it: the order NIXL needs. */
    private void forget(NixlPeer peer, KvBridgeException reason)
    {
        peer.connected = false;
        for (int i = 0; i < runningCount;) {
            NixlTransfer transfer = running[i];
            if (transfer.peer == peer && finishRequest(transfer, TransferStatus.FAILED, reason)) {
                removeRunning(i);
            }
            else {
                i++;
            }
        }
        for (NixlPreparedList list : preparedLists) {
            if (list.peer == peer && list.handle != 0) {
                releaseHandle(list);
            }
        }
        peers.remove(peer.name(), peer);
        peerCount = peers.size();
        agent.invalidateRemoteMetadata(peer.name());
    }

    // ---------------------------------------------------------------- prepared lists

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        checkOpen();
        checkNotEmpty(descriptors);
        return onOwner(() -> {
            checkOpen();
            long[] addresses = descriptors.addresses();
            long[] lengths = descriptors.lengths();
            NixlRegistration[] used = coveringRegistrations(descriptors.kind(), descriptors.device(), addresses, lengths);
            long handle = agent.prepareLocal(descriptors.kind(), descriptors.device(), addresses, lengths, addresses.length);
            return track(new NixlPreparedList(this, null, descriptors.kind(), descriptors.device(), addresses, lengths, used, handle));
        });
    }

    @Override
    public PreparedList prepareRemote(Peer peer, DescriptorList descriptors)
    {
        NixlPeer nixlPeer = ownPeer(peer);
        requireNonNull(descriptors, "descriptors is null");
        checkOpen();
        checkNotEmpty(descriptors);
        return onOwner(() -> {
            checkOpen();
            if (!nixlPeer.connected) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + nixlPeer.name() + "' was disconnected; connect again first");
            }
            long[] addresses = descriptors.addresses();
            long[] lengths = descriptors.lengths();
            RegionTable regions = nixlPeer.regions;
            int hint = -1;
            for (int i = 0; i < addresses.length; i++) {
                hint = regions.find(descriptors.kind(), descriptors.device(), addresses[i], lengths[i], hint);
                if (hint < 0) {
                    throw new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                            "descriptor %d (address=0x%x, length=%d, %s device %d) lies outside every allocation peer '%s' registered; "
                                    + "the peer must register it and send fresh metadata",
                            i, addresses[i], lengths[i], descriptors.kind(), descriptors.device(), nixlPeer.name()));
                }
            }
            long handle = agent.prepareRemote(nixlPeer.name(), descriptors.kind(), descriptors.device(), addresses, lengths, addresses.length);
            return track(new NixlPreparedList(this, nixlPeer, descriptors.kind(), descriptors.device(), addresses, lengths, new NixlRegistration[0], handle));
        });
    }

    private static void checkNotEmpty(DescriptorList descriptors)
    {
        if (descriptors.size() == 0) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "descriptors is empty; NIXL prepares lists of at least one descriptor");
        }
    }

    private NixlPreparedList track(NixlPreparedList list)
    {
        preparedLists.add(list);
        preparedCount = preparedLists.size();
        return list;
    }

    /** Returns the distinct live registrations holding every descriptor, or fails naming the first outside. */
    private NixlRegistration[] coveringRegistrations(MemoryKind kind, int device, long[] addresses, long[] lengths)
    {
        NixlRegistration[] current = registrations;
        List<NixlRegistration> used = new ArrayList<>();
        NixlRegistration last = null;
        for (int i = 0; i < addresses.length; i++) {
            // consecutive descriptors usually share an allocation: test the last one before searching
            if (last == null || !holds(last, kind, device, addresses[i], lengths[i])) {
                last = null;
                for (NixlRegistration registration : current) {
                    if (holds(registration, kind, device, addresses[i], lengths[i])) {
                        last = registration;
                        break;
                    }
                }
                if (last == null) {
                    throw new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                            "descriptor %d (address=0x%x, length=%d, %s device %d) lies outside every allocation registered with '%s'; register the memory first",
                            i, addresses[i], lengths[i], kind, device, agentName));
                }
                if (!used.contains(last)) {
                    used.add(last);
                }
            }
        }
        return used.toArray(new NixlRegistration[0]);
    }

    private static boolean holds(NixlRegistration registration, MemoryKind kind, int device, long address, long length)
    {
        Allocation allocation = registration.allocation;
        return allocation.kind() == kind && allocation.device() == device && allocation.contains(address, length);
    }

    @Override
    public void releasePrepared(PreparedList list)
    {
        NixlPreparedList nixlList = ownList(list);
        if (closed.get()) {
            return;
        }
        onOwner(() -> {
            if (!nixlList.released) {
                nixlList.released = true;
                if (nixlList.handle != 0) {
                    releaseHandle(nixlList);
                }
                preparedLists.remove(nixlList);
                preparedCount = preparedLists.size();
            }
            return null;
        });
    }

    private void releaseHandle(NixlPreparedList list)
    {
        long handle = list.handle;
        list.handle = 0;
        agent.releasePrepared(handle);
    }

    // ---------------------------------------------------------------- transfers

    @Override
    public long post(TransferOp op, PreparedList localList, int[] localIndices, PreparedList remoteList, int[] remoteIndices, int count, byte[] notification)
    {
        requireNonNull(op, "op is null");
        requireNonNull(localIndices, "localIndices is null");
        requireNonNull(remoteIndices, "remoteIndices is null");
        checkOpen();
        NixlPreparedList local = ownList(localList);
        NixlPreparedList remote = ownList(remoteList);
        PostArguments.check(local, localIndices, remote, remoteIndices, count);
        if (count == 0) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "count=0: NIXL moves at least one descriptor pair; use notify() to send a message alone");
        }
        if (notification != null && notification.length > MAX_NOTIFICATION_BYTES) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "notification.length=" + notification.length + " exceeds " + MAX_NOTIFICATION_BYTES
                    + " bytes; move large payloads as data");
        }
        long[] localLengths = local.lengths;
        long[] remoteLengths = remote.lengths;
        for (int i = 0; i < count; i++) {
            int l = localIndices[i];
            int r = remoteIndices[i];
            if (l < 0 || l >= localLengths.length || r < 0 || r >= remoteLengths.length) {
                throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, String.format(Locale.ROOT,
                        "pair %d: local index %d of %d descriptors, remote index %d of %d descriptors", i, l, localLengths.length, r, remoteLengths.length));
            }
            if (localLengths[l] != remoteLengths[r]) {
                throw new KvBridgeException(ErrorCode.LENGTH_MISMATCH, String.format(Locale.ROOT,
                        "pair %d: local descriptor %d has %d bytes but remote descriptor %d has %d bytes", i, l, localLengths[l], r, remoteLengths[r]));
            }
        }
        checkUsable(local, remote);
        NixlTransfer transfer = acquireSlot();
        transfer.op = op;
        transfer.local = local;
        transfer.localIndices = localIndices;
        transfer.remote = remote;
        transfer.remoteIndices = remoteIndices;
        transfer.count = count;
        transfer.notification = notification;
        try {
            execute(transfer);
        }
        catch (RuntimeException e) {
            freeSlot(transfer);
            throw e;
        }
        return transfer.handle();
    }

    private static void checkUsable(NixlPreparedList local, NixlPreparedList remote)
    {
        KvBridgeException unusable = local.unusable();
        if (unusable == null) {
            unusable = remote.unusable();
        }
        if (unusable != null) {
            throw unusable;
        }
    }

    /** Makes and posts the NIXL request of a slot; runs on the owner thread while the poster waits. */
    void postOnOwner(NixlTransfer transfer)
    {
        try {
            checkOpen();
            // checked again here: lists, peers and registrations change only on this thread
            checkUsable(transfer.local, transfer.remote);
            long request = agent.makeRequest(transfer.op, transfer.local.handle, transfer.localIndices, transfer.remote.handle, transfer.remoteIndices,
                    transfer.count, transfer.notification);
            boolean done;
            try {
                done = agent.postRequest(request);
            }
            catch (KvBridgeException e) {
                if (!agent.releaseRequest(request)) {
                    LOG.log(System.Logger.Level.WARNING, "NIXL kept a request whose post failed; it is freed with the agent");
                }
                throw e;
            }
            transfer.request = request;
            transfer.peer = transfer.remote.peer;
            transfer.localList = transfer.local;
            if (done) {
                // finished inside the post: its notification is already on its way
                if (!finishRequest(transfer, TransferStatus.DONE, null)) {
                    addRunning(transfer);
                }
            }
            else {
                addRunning(transfer);
            }
        }
        finally {
            transfer.clearArguments();
        }
    }

    /** Polls every running request once; returns whether any of them changed. */
    private boolean pollRunning()
    {
        boolean changed = false;
        for (int i = 0; i < runningCount;) {
            NixlTransfer transfer = running[i];
            boolean finished;
            if (transfer.releasePending) {
                finished = finishRequest(transfer, transfer.pendingStatus, transfer.pendingFailure);
            }
            else if (transfer.cancelRequested) {
                finished = finishRequest(transfer, TransferStatus.FAILED,
                        new KvBridgeException(ErrorCode.TRANSFER_FAILED, "the transfer was released before it finished"));
            }
            else {
                boolean done;
                KvBridgeException failure = null;
                try {
                    done = agent.pollRequest(transfer.request);
                }
                catch (KvBridgeException e) {
                    done = true;
                    failure = e;
                }
                finished = done && finishRequest(transfer, failure == null ? TransferStatus.DONE : TransferStatus.FAILED, failure);
            }
            if (finished) {
                removeRunning(i);
                changed = true;
            }
            else {
                i++;
            }
        }
        return changed;
    }

    /**
     * Releases and destroys a request (cancelling it if it still runs) and publishes its outcome.
     *
     * @return false when NIXL could not cancel it yet: it stays running and is retried.
     */
    private boolean finishRequest(NixlTransfer transfer, TransferStatus status, KvBridgeException failure)
    {
        if (transfer.request != 0) {
            boolean released;
            try {
                released = agent.releaseRequest(transfer.request);
            }
            catch (KvBridgeException e) {
                // NIXL refused the release itself; the handle is of no further use either way
                LOG.log(System.Logger.Level.WARNING, "releasing a NIXL request failed; it is freed with the agent", e);
                released = true;
            }
            if (!released) {
                transfer.releasePending = true;
                transfer.pendingStatus = status;
                transfer.pendingFailure = failure;
                return false;
            }
            transfer.request = 0;
        }
        transfer.releasePending = false;
        transfer.pendingStatus = null;
        transfer.pendingFailure = null;
        synchronized (slotLock) {
            transfer.failure = failure;
            transfer.status = status;
            transfer.ownerDone = true;
            transfer.peer = null;
            transfer.localList = null;
            if (transfer.released) {
                releaseSlotLocked(transfer);
            }
        }
        return true;
    }

    private void addRunning(NixlTransfer transfer)
    {
        if (runningCount == running.length) {
            running = Arrays.copyOf(running, running.length * 2);
        }
        running[runningCount++] = transfer;
    }

    private void removeRunning(int index)
    {
        running[index] = running[--runningCount];
        running[runningCount] = null;
    }

    @Override
    public TransferStatus status(long handle)
    {
        synchronized (slotLock) {
            return transferOfLocked(handle).status;
        }
    }

    @Override
    public Optional<KvBridgeException> failure(long handle)
    {
        synchronized (slotLock) {
            NixlTransfer transfer = transferOfLocked(handle);
            return transfer.status == TransferStatus.FAILED ? Optional.ofNullable(transfer.failure) : Optional.empty();
        }
    }

    @Override
    public void release(long handle)
    {
        synchronized (slotLock) {
            NixlTransfer transfer = transferOfLocked(handle);
            transfer.released = true;
            inFlight--;
            if (transfer.ownerDone) {
                releaseSlotLocked(transfer);
            }
            else {
                // the owner cancels the NIXL request on its next poll and frees the slot then
                transfer.cancelRequested = true;
            }
        }
    }

    private NixlTransfer acquireSlot()
    {
        synchronized (slotLock) {
            if (inFlight >= maxInFlight) {
                throw new KvBridgeException(ErrorCode.TRANSFER_FAILED, "max-in-flight=" + maxInFlight
                        + " transfers are posted and not released; release finished handles or raise max-in-flight");
            }
            NixlTransfer transfer;
            if (freeCount > 0) {
                transfer = slots[freeSlots[--freeCount]];
            }
            else {
                if (slotCount == slots.length) {
                    slots = Arrays.copyOf(slots, slots.length * 2);
                }
                transfer = new NixlTransfer(this, slotCount);
                slots[slotCount++] = transfer;
            }
            transfer.generation++;
            transfer.released = false;
            transfer.ownerDone = false;
            transfer.cancelRequested = false;
            transfer.failure = null;
            transfer.status = TransferStatus.IN_PROGRESS;
            inFlight++;
            return transfer;
        }
    }

    /** Returns a slot whose post failed; the owner holds nothing for it. */
    private void freeSlot(NixlTransfer transfer)
    {
        synchronized (slotLock) {
            transfer.released = true;
            transfer.ownerDone = true;
            inFlight--;
            releaseSlotLocked(transfer);
        }
    }

    private void releaseSlotLocked(NixlTransfer transfer)
    {
        transfer.generation++;
        transfer.cancelRequested = false;
        if (freeCount == freeSlots.length) {
            freeSlots = Arrays.copyOf(freeSlots, freeSlots.length * 2);
        }
        freeSlots[freeCount++] = transfer.slot;
    }

    private NixlTransfer transferOfLocked(long handle)
    {
        int slot = (int) handle;
        int generation = (int) (handle >>> 32);
        if (slot < 0 || slot >= slotCount || slots[slot].generation != generation || slots[slot].released) {
            throw new KvBridgeException(ErrorCode.HANDLE_UNKNOWN, "transfer handle 0x" + Long.toHexString(handle)
                    + " is unknown to nixl transport '" + agentName + "' or was already released");
        }
        return slots[slot];
    }

    // ---------------------------------------------------------------- notifications

    @Override
    public void notify(Peer peer, byte[] message)
    {
        NixlPeer nixlPeer = ownPeer(peer);
        requireNonNull(message, "message is null");
        checkOpen();
        if (message.length > MAX_NOTIFICATION_BYTES) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "message.length=" + message.length + " exceeds " + MAX_NOTIFICATION_BYTES + " bytes");
        }
        onOwner(() -> {
            checkOpen();
            if (!nixlPeer.connected) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + nixlPeer.name() + "' was disconnected; notification not sent");
            }
            agent.sendNotification(nixlPeer.name(), message);
            return null;
        });
    }

    @Override
    public int drainNotifications(NotificationSink sink)
    {
        requireNonNull(sink, "sink is null");
        if (!closed.get()) {
            onOwner(() -> {
                if (agent != null && !closed.get()) {
                    agent.drainNotifications((sender, message) -> inbox.add(new Received(sender, message)));
                }
                return null;
            });
        }
        // delivered from the caller's thread, one at a time: a throwing sink leaves the rest queued
        int drained = 0;
        Received received;
        while ((received = inbox.poll()) != null) {
            sink.accept(received.sender(), received.message());
            drained++;
        }
        return drained;
    }

    // ---------------------------------------------------------------- lifecycle

    @Override
    public BackendResources resources()
    {
        int transfers;
        synchronized (slotLock) {
            transfers = inFlight;
        }
        return new BackendResources(registrations.length, preparedCount, peerCount, transfers);
    }

    @Override
    public Optional<String> problem()
    {
        if (closed.get()) {
            return Optional.of("nixl transport '" + agentName + "' is closed");
        }
        if (terminated || !owner.isAlive()) {
            Throwable failure = ownerFailure;
            return Optional.of("owner thread " + owner.getName() + " of nixl transport '" + agentName + "' has stopped"
                    + (failure == null ? "" : " after " + failure) + " (state=" + owner.getState() + "): no NIXL call runs, so every call and"
                    + " transfer of this instance fails; close it and create a new one (the log has the stack trace)");
        }
        return Optional.empty();
    }

    @Override
    public void close()
    {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        RuntimeException failure = null;
        try {
            onOwner(() -> {
                try {
                    shutdownNative();
                }
                finally {
                    stopRequested = true;
                }
                return null;
            });
        }
        catch (RuntimeException e) {
            failure = e;
        }
        stopOwner(failure);
        synchronized (slotLock) {
            // close releases every handle: later calls with them see HANDLE_UNKNOWN
            for (int i = 0; i < slotCount; i++) {
                NixlTransfer transfer = slots[i];
                if (!transfer.released) {
                    transfer.released = true;
                    transfer.status = TransferStatus.FAILED;
                    transfer.generation++;
                }
                transfer.ownerDone = true;
            }
            inFlight = 0;
        }
        inbox.clear();
        if (failure != null && !(failure instanceof KvBridgeException k && k.code() == ErrorCode.CLOSED)) {
            throw failure;
        }
    }

    /** NIXL's shutdown order: requests, prepared lists, peers, registrations, then the agent. */
    private void shutdownNative()
    {
        if (agent == null) {
            return;
        }
        KvBridgeException closing = new KvBridgeException(ErrorCode.TRANSFER_FAILED, "nixl transport '" + agentName + "' closed while the transfer ran");
        long deadline = System.nanoTime() + CLOSE_CANCEL_NANOS;
        while (runningCount > 0) {
            for (int i = 0; i < runningCount;) {
                if (finishRequest(running[i], TransferStatus.FAILED, closing)) {
                    removeRunning(i);
                }
                else {
                    i++;
                }
            }
            if (runningCount > 0) {
                if (System.nanoTime() > deadline) {
                    LOG.log(System.Logger.Level.WARNING, "{0} NIXL request(s) of ''{1}'' could not be cancelled within 10 s; destroying the agent anyway",
                            runningCount, agentName);
                    break;
                }
                Thread.onSpinWait();
            }
        }
        RuntimeException first = null;
        for (NixlPreparedList list : preparedLists) {
            list.released = true;
            if (list.handle != 0) {
                first = attempt(first, () -> releaseHandle(list));
            }
        }
        preparedLists.clear();
        preparedCount = 0;
        for (NixlPeer peer : new ArrayList<>(peers.values())) {
            peer.connected = false;
            first = attempt(first, () -> agent.invalidateRemoteMetadata(peer.name()));
        }
        peers.clear();
        peerCount = 0;
        for (NixlRegistration registration : registrations) {
            registration.live = false;
            Allocation allocation = registration.allocation;
            first = attempt(first, () -> agent.deregisterMemory(allocation.kind(), allocation.device(), allocation.address(), allocation.bytes()));
        }
        registrations = new NixlRegistration[0];
        NixlAgent closingAgent = agent;
        agent = null;
        first = attempt(first, closingAgent::close);
        if (first != null) {
            throw first;
        }
    }

    private static RuntimeException attempt(RuntimeException first, Runnable step)
    {
        try {
            step.run();
            return first;
        }
        catch (RuntimeException e) {
            if (first == null) {
                return e;
            }
            first.addSuppressed(e);
            return first;
        }
    }

    private KvBridgeException closedException()
    {
        return new KvBridgeException(ErrorCode.CLOSED, "nixl transport '" + agentName + "' is closed");
    }

    private void checkOpen()
    {
        if (closed.get()) {
            throw closedException();
        }
    }

    private NixlPeer ownPeer(Peer peer)
    {
        requireNonNull(peer, "peer is null");
        if (!(peer instanceof NixlPeer nixlPeer) || nixlPeer.owner != this) {
            throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "peer " + peer + " was not connected by nixl transport '" + agentName + "'");
        }
        return nixlPeer;
    }

    private NixlPreparedList ownList(PreparedList list)
    {
        requireNonNull(list, "prepared list is null");
        if (!(list instanceof NixlPreparedList nixlList) || nixlList.owner != this) {
            throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "prepared list was not prepared by nixl transport '" + agentName + "'");
        }
        return nixlList;
    }

    @Override
    public String toString()
    {
        return "NixlTransferBackend[" + agentName + "]";
    }
}
