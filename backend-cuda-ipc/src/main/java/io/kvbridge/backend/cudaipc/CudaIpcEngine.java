package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CUDA_ERROR_NOT_READY;

import io.kvbridge.backend.cudaipc.ffm.CudaDriver;
import io.kvbridge.backend.cudaipc.ffm.CudaMemcpyBatch;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnerThread;
import io.kvbridge.transport.RunningTransfers;
import io.kvbridge.transport.TransferTable;
import io.kvbridge.transport.libc.Errno;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner thread of one {@code cuda-ipc} instance and what it does: it makes the device's primary
 * context current once and then makes every driver call; it issues each transfer's copies on one of
 * the instance's streams ({@link CopyIssuer}: batches where the driver has {@code cuMemcpyBatchAsync},
 * else one {@code cuMemcpyAsync} per copy) and records an event after the last;
 * between pieces of work it polls the events with {@code cuEventQuery}, parking at most 50 µs while
 * copies run and up to 100 ms when idle (woken by every hand-over), never spinning.
 *
 * <p>A transfer completes in post order per peer: its notification is sent, over the peer's control
 * link, only once its own event and those of every earlier transfer to that peer were reached, so a
 * request split into host and device parts (or any several posts) is announced after its last byte.
 * A failed copy fails its transfer and sends nothing. A peer that died or was disconnected fails its
 * transfers when their copies end; its mappings are closed once no copy runs against them.
 *
 * <p>Threads: everything here but {@link #submit}, {@link #call} and {@link #problem} is the owner's.
 */
final class CudaIpcEngine
{
    private static final Logger LOG = LoggerFactory.getLogger(CudaIpcEngine.class);
    private static final long POLL_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    private static final long IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long CLOSE_DRAIN_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final int WORK_PER_ROUND = 64;

    private final InstanceGuard guard;
    private final int device;
    private final int streamCount;
    private final int batchSize;
    private final long transferTimeoutNanos;
    private final OwnerThread thread;
    private final long closeTimeoutNanos;
    private volatile boolean parked;
    private volatile String stickyError;

    // owner thread only
    private TransferTable<CudaIpcTransfer> table;
    private Inbox inbox;
    private ControlChannel control;
    private long context;
    private long[] streams = new long[0];
    private CopyIssuer issuer;
    private int nextStream;
    private boolean stopRequested;
    private final RunningTransfers<CudaIpcTransfer> running = new RunningTransfers<>();
    private final List<CudaIpcPeer> active = new ArrayList<>();
    private final List<CudaIpcPeer> retiring = new ArrayList<>();
    /** Peers with allocations detached by revokes, closed and answered once no copy runs against them. */
    private final List<CudaIpcPeer> detaching = new ArrayList<>();
    private long[] abandonedEvents = new long[8];
    private CudaIpcPeer[] abandonedPeers = new CudaIpcPeer[8];
    private int abandonedCount;
    /** The stream and event of the engine's host copies, made on first use. */
    private long hostCopyStream;
    private long hostCopyEvent;
    private Runnable shutdown;
    final Errno errno = new Errno(Arena.ofAuto());

    /**
     * @param batchSize copies per batch call, or 0 for one {@code cuMemcpyAsync} per copy always.
     * @param closeTimeoutNanos how long {@link #stop()} waits for the owner to take the stop.
     */
    CudaIpcEngine(InstanceGuard guard, int device, int streamCount, int batchSize, long transferTimeoutNanos, int capacity, long closeTimeoutNanos)
    {
        this.closeTimeoutNanos = closeTimeoutNanos;
        this.guard = guard;
        this.device = device;
        this.streamCount = streamCount;
        this.batchSize = batchSize;
        this.transferTimeoutNanos = transferTimeoutNanos;
        this.thread = new OwnerThread("kvbridge-cuda-ipc-" + guard.agentName(), guard.description(), capacity, this::loop, this::wake);
    }

    /**
     * Starts the thread, makes the primary context current on it and creates the streams.
     *
     * @param nativeShutdown releases the instance's native state; runs on the owner when the loop ends.
     */
    void start(TransferTable<CudaIpcTransfer> transfers, Inbox notifications, ControlChannel channel, Runnable nativeShutdown)
    {
        this.table = transfers;
        this.inbox = notifications;
        this.control = channel;
        this.shutdown = nativeShutdown;
        thread.start();
        try {
            thread.call(() -> {
                openContext();
                return null;
            });
        }
        catch (RuntimeException e) {
            stop();
            throw e;
        }
    }

    private void openContext()
    {
        CudaDriver.check(CudaDriver.cuInit(0), "cuInit", "starting " + guard.description());
        int[] ordinal = new int[1];
        CudaDriver.check(CudaDriver.cuDeviceGet(ordinal, device), "cuDeviceGet", "device=" + device + "; pick one of the devices the probe lists");
        long[] out = new long[1];
        CudaDriver.check(CudaDriver.cuDevicePrimaryCtxRetain(out, ordinal[0]), "cuDevicePrimaryCtxRetain", "device " + device);
        context = out[0];
        CudaDriver.check(CudaDriver.cuCtxSetCurrent(context), "cuCtxSetCurrent", "device " + device);
        streams = new long[streamCount];
        for (int i = 0; i < streamCount; i++) {
            CudaDriver.check(CudaDriver.cuStreamCreate(out), "cuStreamCreate", "stream " + i + " of device " + device);
            streams[i] = out[0];
        }
        int[] version = new int[1];
        int rc = CudaDriver.cuDriverGetVersion(version);
        String single = "; one cuMemcpyAsync per coalesced run";
        CudaMemcpyBatch.EntryPoint batch = batchSize == 0 ? new CudaMemcpyBatch.EntryPoint(MemorySegment.NULL, 0, "off (option batch=off)" + single)
                : rc != 0 ? new CudaMemcpyBatch.EntryPoint(MemorySegment.NULL, 0, "none: cuDriverGetVersion returned " + rc + single)
                : CudaMemcpyBatch.find(version[0]);
        issuer = new CopyIssuer(batch, Math.max(batchSize, 2));
        LOG.debug("{}: copies are issued with {}", guard.description(), issuer.describe());
    }

    /** @return how this instance issues copies: the batch entry point or why it has none. */
    String copyPath()
    {
        return issuer == null ? "not started" : issuer.describe();
    }

    private void closeContext()
    {
        if (issuer != null) {
            issuer.close();
            issuer = null;
        }
        if (hostCopyEvent != 0) {
            CudaDriver.cuEventDestroy(hostCopyEvent);
            hostCopyEvent = 0;
        }
        if (hostCopyStream != 0) {
            CudaDriver.cuStreamDestroy(hostCopyStream);
            hostCopyStream = 0;
        }
        for (long stream : streams) {
            if (stream != 0) {
                CudaDriver.cuStreamDestroy(stream);
            }
        }
        streams = new long[0];
        if (context != 0) {
            CudaDriver.cuCtxSetCurrent(0);
            CudaDriver.cuDevicePrimaryCtxRelease(device);
            context = 0;
        }
    }

    private void loop()
    {
        try {
            while (!stopRequested) {
                boolean progressed = thread.runQueued(WORK_PER_ROUND) > 0;
                if (stopRequested) {
                    break;
                }
                progressed |= poll();
                if (progressed) {
                    continue;
                }
                parked = true;
                if (!thread.hasQueued()) {
                    LockSupport.parkNanos(this, running.isEmpty() && abandonedCount == 0 && retiring.isEmpty() && detaching.isEmpty() ? IDLE_PARK_NANOS : POLL_PARK_NANOS);
                }
                parked = false;
            }
            drain();
        }
        finally {
            try {
                if (shutdown != null) {
                    shutdown.run();
                }
            }
            catch (RuntimeException e) {
                LOG.warn("releasing the native state of {} failed", guard.description(), e);
            }
            finally {
                closeContext();
            }
        }
    }

    /** Polls until every copy ended or the close deadline passed, failing what it cuts off. */
    private void drain()
    {
        long deadline = System.nanoTime() + CLOSE_DRAIN_NANOS;
        while ((!running.isEmpty() || abandonedCount > 0) && System.nanoTime() < deadline) {
            if (!poll()) {
                LockSupport.parkNanos(this, POLL_PARK_NANOS);
            }
        }
        if (!running.isEmpty() || abandonedCount > 0) {
            LOG.warn("{}: {} transfers and {} abandoned copies still ran {} s after close; their mappings are left to the process's exit",
                    guard.description(), running.size(), abandonedCount, TimeUnit.NANOSECONDS.toSeconds(CLOSE_DRAIN_NANOS));
        }
        for (CudaIpcPeer peer : active) {
            CudaIpcTransfer transfer;
            while ((transfer = peer.inOrder.poll()) != null) {
                table.finish(transfer, guard.closedError());
            }
        }
        active.clear();
    }

    private void wake()
    {
        if (parked) {
            thread.unpark();
        }
    }

    /** Issues a transfer's copies; owner thread, from the post's hand-over. */
    void start(CudaIpcTransfer transfer)
    {
        CudaIpcPeer peer = transfer.peer;
        String dead = transfer.local.deadMemoryReason();
        if (dead == null) {
            dead = transfer.remote.deadMemoryReason();
        }
        String peerProblem = peer.unusableReason();
        if (dead != null || peerProblem != null || transfer.cancelled()) {
            fail(transfer, dead != null ? new KvBridgeException(ErrorCode.NOT_REGISTERED, "the transfer could not start: " + dead)
                    : peerProblem != null ? new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peer.name() + "' cannot be used: " + peerProblem)
                    : new KvBridgeException(ErrorCode.TRANSFER_FAILED, "the transfer was released before it started"));
            return;
        }
        if (transfer.event == 0) {
            long[] out = new long[1];
            int rc = CudaDriver.cuEventCreate(out);
            if (rc != 0) {
                fail(transfer, CudaDriver.failure(ErrorCode.TRANSFER_FAILED, rc, "cuEventCreate", "starting a transfer to '" + peer.name() + "'"));
                return;
            }
            transfer.event = out[0];
        }
        String detached = detachedRegion(transfer);
        if (detached != null) {
            fail(transfer, new KvBridgeException(ErrorCode.NOT_GRANTED, detached));
            return;
        }
        long stream = streams[nextStream];
        nextStream = nextStream + 1 == streams.length ? 0 : nextStream + 1;
        transfer.reached = false;
        transfer.copyFailure = issuer.issue(transfer, stream);
        int rc = CudaDriver.cuEventRecord(transfer.event, stream);
        if (rc != 0) {
            // without an event the copies' end cannot be seen: keep the peer's mappings until close
            peer.running++;
            fail(transfer, CudaDriver.failure(ErrorCode.TRANSFER_FAILED, rc, "cuEventRecord", "ending a transfer to '" + peer.name() + "'"));
            transfer.event = 0;
            return;
        }
        transfer.deadlineNanos = System.nanoTime() + transferTimeoutNanos;
        running.add(transfer);
        peer.running++;
        if (peer.inOrder.isEmpty() && !active.contains(peer)) {
            active.add(peer);
        }
        peer.inOrder.add(transfer);
    }

    /** @return why a transfer cannot start because the peer revoked a region it copies to or from since the post, or null; allocation-free. */
    private static String detachedRegion(CudaIpcTransfer transfer)
    {
        DescriptorPairs copies = transfer.copies;
        for (int i = 0; i < copies.size(); i++) {
            CudaIpcPeer.RemoteRegion region = transfer.remote.region(copies.remoteRegion(i));
            if (region.opened == null) {
                return "peer '" + transfer.peer.name() + "' revoked its last grant in region " + region.advertised.id()
                        + " after the post; post again under a live grant";
            }
        }
        return null;
    }

    /** Detaches a peer's revoked regions; they are closed, and the peer answered, once no copy runs against it. Owner thread. */
    void detach(CudaIpcPeer peer, int[] regionIds)
    {
        peer.detach(regionIds);
        if (!detaching.contains(peer)) {
            detaching.add(peer);
        }
        poll();
    }

    /**
     * Copies between host memory and registered memory for the engine, on a stream of its own so
     * that it waits for no transfer, and returns once the bytes are there. The owner keeps polling
     * transfers while it waits; the wait ends at the transfer deadline.
     *
     * @param what names the copy in errors.
     */
    void copyHost(long destination, long source, long bytes, String what)
    {
        if (bytes == 0) {
            return;
        }
        thread.call(() -> {
            if (hostCopyStream == 0) {
                long[] out = new long[1];
                CudaDriver.check(CudaDriver.cuStreamCreate(out), "cuStreamCreate", "the host-copy stream of device " + device);
                hostCopyStream = out[0];
                CudaDriver.check(CudaDriver.cuEventCreate(out), "cuEventCreate", "the host-copy event of device " + device);
                hostCopyEvent = out[0];
            }
            int rc = CudaDriver.cuMemcpyAsync(destination, source, bytes, hostCopyStream);
            if (rc != 0) {
                throw CudaDriver.failure(ErrorCode.TRANSFER_FAILED, rc, "cuMemcpyAsync", what);
            }
            CudaDriver.check(CudaDriver.cuEventRecord(hostCopyEvent, hostCopyStream), "cuEventRecord", what);
            long deadline = System.nanoTime() + transferTimeoutNanos;
            while ((rc = CudaDriver.cuEventQuery(hostCopyEvent)) == CUDA_ERROR_NOT_READY) {
                if (System.nanoTime() - deadline > 0) {
                    // the copy may still land later: the caller's host memory must not be trusted to this instance again
                    String problem = what + " did not end within " + TimeUnit.NANOSECONDS.toMillis(transferTimeoutNanos) + " ms (transfer-timeout-ms); "
                            + "the copy may still be queued on device " + device + ": close this instance";
                    if (stickyError == null) {
                        stickyError = problem;
                    }
                    throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, problem);
                }
                if (!poll()) {
                    LockSupport.parkNanos(this, POLL_PARK_NANOS);
                }
            }
            if (rc != 0) {
                noteSticky(rc);
                throw CudaDriver.failure(ErrorCode.TRANSFER_FAILED, rc, "cuEventQuery", what + " failed");
            }
            return null;
        });
    }

    /** A post handed over after the owner stopped: it fails with the cause. */
    void abandon(CudaIpcTransfer transfer, RuntimeException cause)
    {
        KvBridgeException failure = cause instanceof KvBridgeException typed ? typed : new KvBridgeException(ErrorCode.CLOSED, String.valueOf(cause));
        table.finish(transfer, failure);
        inbox.wake();
    }

    private void fail(CudaIpcTransfer transfer, KvBridgeException failure)
    {
        table.finish(transfer, failure);
        inbox.wake();
    }

    /** @return true when something ended. */
    private boolean poll()
    {
        boolean progressed = false;
        for (int i = running.size() - 1; i >= 0; i--) {
            CudaIpcTransfer transfer = running.get(i);
            int rc = CudaDriver.cuEventQuery(transfer.event);
            if (rc == CUDA_ERROR_NOT_READY) {
                continue;
            }
            if (rc != 0) {
                transfer.copyFailure = CudaDriver.failure(ErrorCode.TRANSFER_FAILED, rc, "cuEventQuery", "a copy of the transfer to peer '"
                        + transfer.peer.name() + "' failed; nothing is announced to the peer");
                noteSticky(rc);
            }
            transfer.reached = true;
            running.removeAt(i);
            progressed = true;
        }
        long now = System.nanoTime();
        for (int p = active.size() - 1; p >= 0; p--) {
            CudaIpcPeer peer = active.get(p);
            CudaIpcTransfer head;
            while ((head = peer.inOrder.peek()) != null) {
                if (head.reached) {
                    peer.inOrder.poll();
                    peer.running--;
                    complete(head);
                    progressed = true;
                }
                else if (now - head.deadlineNanos > 0) {
                    peer.inOrder.poll();
                    for (int i = 0; i < running.size(); i++) {
                        if (running.get(i) == head) {
                            running.removeAt(i);
                            break;
                        }
                    }
                    abandonEvent(head.event, peer);
                    head.event = 0;
                    fail(head, new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, "the copies of a transfer to peer '" + peer.name() + "' did not end within "
                            + TimeUnit.NANOSECONDS.toMillis(transferTimeoutNanos) + " ms (transfer-timeout-ms); nothing is announced to the peer"));
                    progressed = true;
                }
                else {
                    break;
                }
            }
            if (peer.inOrder.isEmpty()) {
                active.remove(p);
            }
        }
        for (int i = abandonedCount - 1; i >= 0; i--) {
            int rc = CudaDriver.cuEventQuery(abandonedEvents[i]);
            if (rc != CUDA_ERROR_NOT_READY) {
                CudaDriver.cuEventDestroy(abandonedEvents[i]);
                abandonedPeers[i].running--;
                abandonedCount--;
                abandonedEvents[i] = abandonedEvents[abandonedCount];
                abandonedPeers[i] = abandonedPeers[abandonedCount];
                abandonedPeers[abandonedCount] = null;
                progressed = true;
            }
        }
        for (int i = detaching.size() - 1; i >= 0; i--) {
            CudaIpcPeer peer = detaching.get(i);
            if (peer.running == 0) {
                peer.closeDetached(errno);
                detaching.remove(i);
                progressed = true;
                answerRevokes(peer);
            }
        }
        for (int i = retiring.size() - 1; i >= 0; i--) {
            CudaIpcPeer peer = retiring.get(i);
            if (peer.running == 0) {
                peer.closeMappings(errno);
                retiring.remove(i);
                detaching.remove(peer);
                progressed = true;
                answerRevokes(peer);
                acknowledgeUnmap(peer);
            }
        }
        return progressed;
    }

    /** Tells a peer that the regions of each of its revoke notices are unmapped here. */
    private void answerRevokes(CudaIpcPeer peer)
    {
        ControlChannel.Link link = peer.link;
        for (; peer.revokesToAnswer > 0; peer.revokesToAnswer--) {
            String problem = link == null ? "it has no link" : control.regionsUnmapped(link);
            if (problem != null) {
                LOG.debug("{}: telling peer '{}' that its revoked regions are unmapped failed: {}", guard.description(), peer.name(), problem);
            }
        }
    }

    /** Tells a closing peer that its memory is unmapped here and no copy runs against it any more. */
    private void acknowledgeUnmap(CudaIpcPeer peer)
    {
        ControlChannel.Link link = peer.link;
        if (peer.acknowledgeUnmap && link != null) {
            peer.acknowledgeUnmap = false;
            String problem = control.unmapped(link);
            if (problem != null) {
                LOG.debug("{}: telling closing peer '{}' that its memory is unmapped failed: {}", guard.description(), peer.name(), problem);
            }
        }
    }

    private void abandonEvent(long event, CudaIpcPeer peer)
    {
        if (abandonedCount == abandonedEvents.length) {
            abandonedEvents = java.util.Arrays.copyOf(abandonedEvents, abandonedCount * 2);
            abandonedPeers = java.util.Arrays.copyOf(abandonedPeers, abandonedCount * 2);
        }
        abandonedEvents[abandonedCount] = event;
        abandonedPeers[abandonedCount++] = peer;
    }

    private void noteSticky(int rc)
    {
        // these leave the context unusable on a real driver: every later call fails until the process restarts
        if (rc == 700 || rc == 701 || rc == 702 || rc == 714 || rc == 715 || rc == 716 || rc == 719) {
            if (stickyError == null) {
                stickyError = "a copy hit " + CudaDriver.errorName(rc) + " (" + rc + "), which leaves the CUDA context of device " + device
                        + " unusable; close this instance and restart the process";
            }
        }
    }

    private void complete(CudaIpcTransfer transfer)
    {
        CudaIpcPeer peer = transfer.peer;
        KvBridgeException failure = transfer.copyFailure;
        if (failure == null && transfer.cancelled()) {
            failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, "the transfer was released while its copies ran; its notification was not sent");
        }
        if (failure == null) {
            String problem = peer.unusableReason();
            if (problem != null) {
                failure = new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peer.name() + "' went away while the copies ran: " + problem);
            }
        }
        if (failure == null && transfer.notification.present()) {
            ControlChannel.Link link = peer.link;
            String problem = link == null ? "it has no control link" : control.notify(link, transfer.notification.bytes(), transfer.notification.length());
            if (problem != null) {
                failure = new KvBridgeException(ErrorCode.PEER_UNKNOWN, "the data reached peer '" + peer.name() + "' but its notification did not: " + problem);
            }
        }
        table.finish(transfer, failure);
        inbox.wake();
    }

    /** Queues a peer's mappings to be closed once no copy runs against them; owner thread. */
    void retire(CudaIpcPeer peer)
    {
        if (!retiring.contains(peer)) {
            retiring.add(peer);
        }
        poll();
    }

    /** Closes what is left of every peer, running copies or not; owner thread, at close. */
    void retireAllNow(List<CudaIpcPeer> peers)
    {
        for (CudaIpcPeer peer : peers) {
            if (peer.running > 0) {
                LOG.warn("{}: closing peer '{}''s mappings with {} copies unaccounted for", guard.description(), peer.name(), peer.running);
            }
            peer.closeMappings(errno);
        }
        retiring.clear();
    }

    int device()
    {
        return device;
    }

    void submit(CudaIpcTransfer transfer)
    {
        thread.submit(transfer);
    }

    <T> T call(Supplier<T> action)
    {
        return thread.call(action);
    }

    /** As {@link #call(Supplier)}, waiting at most a while for the owner to take it. */
    <T> T call(Supplier<T> action, long timeoutNanos, String what)
    {
        return thread.call(action, timeoutNanos, what);
    }

    /**
     * Ends the loop after draining, and waits for the thread; each wait is bounded, since a driver
     * call of a hung device may not return.
     *
     * @throws KvBridgeException {@code DEADLINE_EXCEEDED} when the owner did not take the request to
     *     stop in time: it is inside a driver call, and what it holds stays with it.
     */
    void stop()
    {
        try {
            thread.call(() -> {
                stopRequested = true;
                return null;
            }, closeTimeoutNanos, "asking the copy loop to stop");
        }
        catch (KvBridgeException e) {
            if (e.code() == ErrorCode.DEADLINE_EXCEEDED) {
                throw e;
            }
            // CLOSED: the loop has ended
        }
        thread.join(TimeUnit.SECONDS.toMillis(30));
    }

    Optional<String> problem()
    {
        Optional<String> stopped = thread.problem();
        if (stopped.isPresent()) {
            return stopped;
        }
        return Optional.ofNullable(stickyError);
    }
}
