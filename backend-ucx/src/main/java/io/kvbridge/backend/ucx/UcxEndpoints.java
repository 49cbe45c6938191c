package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpEndpoint;
import io.kvbridge.backend.ucx.ffm.UcpStatus;
import io.kvbridge.backend.ucx.ffm.UcpWorker;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnerThread;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The peers of one instance: setting up an endpoint per peer ({@code connect()} returns once UCX's
 * setup of it is answered), the peer's remote keys, endpoint errors, and retiring endpoints in
 * UCX's order: operations first, then keys, then the endpoint.
 *
 * <p>Threads: {@link #connect} and {@link #peerCount()} run on caller threads; the peer list is
 * guarded by its own monitor; every other method and field belongs to the owner thread.
 */
final class UcxEndpoints
{
    private final InstanceGuard guard;
    private final UcxOptions options;
    private final UcxWorker worker;
    private final OwnerThread owner;

    // guarded by itself: the connected peers, as resources() counts them
    private final List<UcxPeer> peers = new ArrayList<>();

    // owner thread only
    private final Map<Long, UcxPeer> peersByToken = new HashMap<>();
    private final List<UcxPeer> retiring = new ArrayList<>();
    // connect() calls waiting for UCX to set their endpoint up
    private final List<Setup> setups = new ArrayList<>();

    /** A connect() waiting for UCX to finish setting up its endpoint. */
    record Setup(UcxPeer peer, long request, CompletableFuture<Void> answered)
    {
    }

    UcxEndpoints(InstanceGuard guard, UcxOptions options, UcxWorker worker, OwnerThread owner)
    {
        this.guard = guard;
        this.options = options;
        this.worker = worker;
        this.owner = owner;
    }

    /** Connects a peer or refreshes a connected one, and waits for UCX's setup; a caller thread. */
    UcxPeer connect(UcxMetadata metadata)
    {
        checkTcpSegment(metadata);
        Setup setup = owner.call(() -> startSetup(connectOnOwner(metadata)));
        awaitAnswer(setup);
        return setup.peer();
    }

    /**
     * Refuses a peer whose UCX tcp transport receives pieces of another size than this instance's.
     * UCX sends a message in pieces as large as the sender's own receive segment and does not check
     * the receiver's: a larger piece overruns the receiver's buffer. Both sides must use one size.
     */
    private void checkTcpSegment(UcxMetadata metadata)
    {
        int theirs = metadata.tcpSegmentBytes();
        int ours = options.tcpSegmentBytes();
        if (theirs != 0 && ours != 0 && theirs != ours) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "peer '" + metadata.agentName() + "' uses UCX tcp segments of " + theirs
                    + " bytes and " + guard.description() + " of " + ours + ": UCX does not check that a peer can take the pieces it sends;"
                    + " give both sides the same " + UcxOptions.TCP_SEGMENT + " option (default " + UcxOptions.DEFAULT_TCP_SEGMENT + ", or "
                    + UcxOptions.TCP_SEGMENT_ENVIRONMENT + " where the option is not given)");
        }
    }

    /**
     * Waits until UCX has set the endpoint up, which includes the peer's answer to the wireup
     * request that unpacking its remote keys sends. Returning earlier would let the caller close
     * the peer while it still owes that answer: UCX 1.13 aborts a process that destroys its worker
     * with such an answer unsent (an assertion in {@code ucp_request_send_state_ff}). It also
     * makes an unreachable peer fail here rather than at the first transfer. A granted instance
     * unpacks no keys: over shared memory its endpoint needs no answer, so a stopped peer is found
     * by the first transfer's deadline instead.
     */
    private void awaitAnswer(Setup setup)
    {
        String peer = setup.peer().name();
        try {
            setup.answered().get(options.connectTimeoutMillis(), TimeUnit.MILLISECONDS);
        }
        catch (TimeoutException e) {
            String reason = "it did not answer UCX's connection setup within " + options.connectTimeoutMillis() + " ms";
            if (owner.call(() -> abandonSetup(setup, reason))) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot reach peer '" + peer + "' with tls=" + options.describeTls()
                        + ": " + reason + "; check that it is running and reachable, or raise " + UcxOptions.CONNECT_TIMEOUT_MS);
            }
            // the setup ended while the caller timed out: report how it ended
            awaitAnswer(setup);
        }
        catch (InterruptedException e) {
            // abandoned before the flag is set again, which would make the call fail at once
            owner.call(() -> abandonSetup(setup, "connect() was interrupted"));
            Thread.currentThread().interrupt();
            throw new KvBridgeException(ErrorCode.CLOSED, "interrupted while connecting " + guard.description() + " to peer '" + peer + "'");
        }
        catch (ExecutionException e) {
            throw e.getCause() instanceof KvBridgeException failure ? failure
                    : new KvBridgeException(ErrorCode.NATIVE_ERROR, "connecting to peer '" + peer + "' failed: " + e.getCause(), e.getCause());
        }
    }

    private UcxPeer connectOnOwner(UcxMetadata metadata)
    {
        synchronized (peers) {
            for (UcxPeer peer : peers) {
                if (peer.instanceId == metadata.instanceId() && peer.unusableReason() == null) {
                    refreshRegions(peer, metadata);
                    return peer;
                }
            }
        }
        long token = UcpEndpoint.newEndpointToken();
        UcxPeer peer = new UcxPeer(guard, metadata.instanceId(), metadata.agentName(), token);
        try {
            peer.endpoint = UcpEndpoint.epCreate(worker.worker(), metadata.workerAddress(), token, this::onEndpointError);
        }
        catch (KvBridgeException e) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot reach peer '" + metadata.agentName() + "' with tls="
                    + options.describeTls() + ": " + e.getMessage()
                    + "; check that it is running and that both sides share a UCX transport (see ucx_info -d)", e);
        }
        peersByToken.put(token, peer);
        try {
            refreshRegions(peer, metadata);
        }
        catch (KvBridgeException e) {
            peer.markUnusable("its metadata could not be used");
            peer.failed = true;
            retire(peer);
            throw e;
        }
        synchronized (peers) {
            peers.add(peer);
        }
        return peer;
    }

    /** Flushes the peer's endpoint: the flush ends once UCX's setup of it, answer included, is done. */
    private Setup startSetup(UcxPeer peer)
    {
        long request = UcpEndpoint.epFlushNbx(peer.endpoint, worker.emptyParam());
        boolean pending = request != 0 && !UcpStatus.isError(request);
        Setup setup = new Setup(peer, pending ? request : 0, new CompletableFuture<>());
        if (pending) {
            setups.add(setup);
        }
        else {
            endSetup(setup, request == 0 ? UcpStatus.OK : UcpStatus.statusOf(request));
        }
        return setup;
    }

    /** Ends the setups UCX has finished; owner thread, each round. */
    boolean advanceSetups()
    {
        boolean progressed = false;
        for (int i = setups.size() - 1; i >= 0; i--) {
            Setup setup = setups.get(i);
            byte status = UcpWorker.requestStatus(setup.request());
            if (status != UcpStatus.IN_PROGRESS) {
                UcpWorker.requestFree(setup.request());
                setups.remove(i);
                endSetup(setup, status);
                progressed = true;
            }
        }
        return progressed;
    }

    private void endSetup(Setup setup, byte status)
    {
        UcxPeer peer = setup.peer();
        if (status == UcpStatus.OK && !peer.failed) {
            setup.answered().complete(null);
            return;
        }
        String reason = peer.unusableReason() != null ? peer.unusableReason() : "its connection setup failed: " + UcpStatus.statusString(status);
        unlist(peer);
        markFailed(peer, reason);
        setup.answered().completeExceptionally(new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot reach peer '" + peer.name() + "' with tls="
                + options.describeTls() + ": " + reason + "; check that it is running and that both sides share a UCX transport (see ucx_info -d)"));
    }

    /** Gives up a connect() still waiting for its peer; false when the setup ended meanwhile, either way. */
    private boolean abandonSetup(Setup setup, String reason)
    {
        if (setup.answered().isDone()) {
            return false;
        }
        if (setups.remove(setup)) {
            // freed in flight: UCX releases it when the flush ends, which closing the endpoint forces
            UcpWorker.requestFree(setup.request());
        }
        UcxPeer peer = setup.peer();
        unlist(peer);
        markFailed(peer, reason);
        setup.answered().completeExceptionally(new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peer.name() + "': " + reason));
        return true;
    }

    /** Takes a peer off the list of connected peers; false when it already was. */
    private boolean unlist(UcxPeer peer)
    {
        synchronized (peers) {
            if (!peer.listed) {
                return false;
            }
            peer.listed = false;
            peers.remove(peer);
            return true;
        }
    }

    private void refreshRegions(UcxPeer peer, UcxMetadata metadata)
    {
        if (!options.granted() && metadata.regions().stream().anyMatch(region -> region.packedKey().length == 0)) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "peer '" + metadata.agentName() + "' uses access=granted and publishes no remote keys,"
                    + " so this instance's access=registered (one-sided puts and gets) cannot reach it; set access=granted on this instance too");
        }
        UcxRemoteRegion[] old = peer.regions;
        UcxRemoteRegion[] next = new UcxRemoteRegion[metadata.regions().size()];
        boolean[] kept = new boolean[old.length];
        try {
            for (int i = 0; i < next.length; i++) {
                UcxMetadata.Region region = metadata.regions().get(i);
                for (int j = 0; j < old.length && next[i] == null; j++) {
                    if (!kept[j] && old[j].advertised.sameAs(region)) {
                        next[i] = old[j];
                        kept[j] = true;
                    }
                }
                if (next[i] == null) {
                    // a granted instance reaches peers through their grants: it unpacks no key
                    next[i] = new UcxRemoteRegion(region, options.granted() ? 0 : UcpEndpoint.rkeyUnpack(peer.endpoint, region.packedKey()));
                }
            }
        }
        catch (KvBridgeException e) {
            for (int i = 0; i < next.length; i++) {
                if (next[i] != null && !Arrays.asList(old).contains(next[i])) {
                    destroyKey(next[i]);
                }
            }
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "peer '" + metadata.agentName() + "' sent a remote key UCX cannot unpack: "
                    + e.getMessage(), e);
        }
        for (int j = 0; j < old.length; j++) {
            if (!kept[j]) {
                old[j].live = false;
                peer.retiredRegions.add(old[j]);
            }
        }
        peer.regions = next;
        destroyRetiredKeys(peer);
    }

    /** Destroys the keys of regions the peer stopped advertising once no issued operation can use them; owner thread. */
    void destroyRetiredKeys(UcxPeer peer)
    {
        // a key is destroyed only once no issued operation can still use it
        if (peer.inFlight == 0 && !peer.retiredRegions.isEmpty()) {
            for (UcxRemoteRegion region : peer.retiredRegions) {
                destroyKey(region);
            }
            peer.retiredRegions.clear();
        }
    }

    private static void destroyKey(UcxRemoteRegion region)
    {
        if (!region.destroyed) {
            region.destroyed = true;
            if (region.rkey != 0) {
                UcpEndpoint.rkeyDestroy(region.rkey);
            }
        }
    }

    private static void destroyAllKeys(UcxPeer peer)
    {
        for (UcxRemoteRegion region : peer.regions) {
            region.live = false;
            destroyKey(region);
        }
        for (UcxRemoteRegion region : peer.retiredRegions) {
            destroyKey(region);
        }
        peer.retiredRegions.clear();
    }

    /** Disconnects a peer; owner thread. */
    void disconnect(UcxPeer peer)
    {
        if (unlist(peer)) {
            peer.markUnusable("it was disconnected");
            retire(peer);
        }
    }

    // runs inside ucp_worker_progress on the owner thread: record only, no UCX calls
    private void onEndpointError(long token, byte status)
    {
        UcxPeer peer = peersByToken.get(token);
        if (peer != null) {
            markFailed(peer, "its endpoint failed: " + UcpStatus.statusString(status));
        }
    }

    /** Records that a peer cannot be used and starts retiring its endpoint; owner thread. */
    void markFailed(UcxPeer peer, String reason)
    {
        peer.failed = true;
        peer.markUnusable(reason);
        retire(peer);
    }

    /** Marks every peer of a closing instance failed, on its goodbye; owner thread. */
    void peerClosed(long instanceId)
    {
        List<UcxPeer> closing = new ArrayList<>();
        for (UcxPeer peer : peersByToken.values()) {
            if (peer.instanceId == instanceId) {
                closing.add(peer);
            }
        }
        for (UcxPeer peer : closing) {
            markFailed(peer, "the peer closed");
        }
    }

    /** Starts closing a peer's endpoint once its in-flight work is done or its deadline passed. */
    void retire(UcxPeer peer)
    {
        if (!peer.retiring) {
            peer.retiring = true;
            peer.retireDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis());
            retiring.add(peer);
        }
    }

    /** Moves the retiring peers along; owner thread, each round. */
    boolean advanceRetiring()
    {
        boolean progressed = false;
        for (int i = retiring.size() - 1; i >= 0; i--) {
            UcxPeer peer = retiring.get(i);
            if (advanceRetiring(peer)) {
                retiring.remove(i);
                progressed = true;
            }
        }
        return progressed;
    }

    /** Moves one retiring peer along; true once everything of it is released. */
    private boolean advanceRetiring(UcxPeer peer)
    {
        long now = System.nanoTime();
        boolean drained = peer.inFlight == 0 && peer.pendingSends == 0;
        if (peer.retireStage == 0) {
            if (!drained && !peer.failed && now - peer.retireDeadlineNanos < 0) {
                return false;
            }
            if (drained) {
                // UCX's order: keys after the operations using them, before their endpoint
                destroyAllKeys(peer);
            }
            peersByToken.remove(peer.token);
            // a healthy, drained endpoint closes gracefully; otherwise outstanding operations are
            // cancelled, which completes their requests
            long request = UcpEndpoint.epCloseNbx(peer.endpoint, peer.failed || !drained, peer.token);
            peer.endpoint = 0;
            peer.retireStage = 1;
            peer.closeRequest = request != 0 && !UcpStatus.isError(request) ? request : 0;
            peer.retireDeadlineNanos = now + TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis());
        }
        if (peer.closeRequest != 0) {
            byte status = UcpWorker.requestStatus(peer.closeRequest);
            if (status == UcpStatus.IN_PROGRESS && now - peer.retireDeadlineNanos < 0) {
                return false;
            }
            // past the deadline the request is freed in flight; destroying the worker ends it
            UcpWorker.requestFree(peer.closeRequest);
            peer.closeRequest = 0;
        }
        if (!drained && now - peer.retireDeadlineNanos < 0) {
            return false;
        }
        destroyAllKeys(peer);
        return true;
    }

    /** @return true while endpoints are being set up or retired; owner thread. */
    boolean busy()
    {
        return !retiring.isEmpty() || !setups.isEmpty();
    }

    /**
     * Names the sender of an active message for refusal reports: the connected peer whose endpoint
     * answered, else the one with the instance id the message claims, else the id itself. Owner thread.
     */
    String nameOf(long instanceId, long replyEndpoint)
    {
        UcxPeer byEndpoint = peerWithEndpoint(replyEndpoint);
        if (byEndpoint != null) {
            return byEndpoint.name();
        }
        for (UcxPeer peer : peersByToken.values()) {
            if (peer.instanceId == instanceId) {
                return peer.name() + " (as claimed)";
            }
        }
        return String.format(java.util.Locale.ROOT, "unconnected instance %016x", instanceId);
    }

    /** @return the peer whose endpoint this is, or null; owner thread. */
    UcxPeer peerWithEndpoint(long endpoint)
    {
        for (UcxPeer peer : peersByToken.values()) {
            if (peer.endpoint == endpoint && endpoint != 0) {
                return peer;
            }
        }
        return null;
    }

    /** @return every peer with an endpoint, for the goodbyes at shutdown; owner thread. */
    List<UcxPeer> endpointPeers()
    {
        return new ArrayList<>(peersByToken.values());
    }

    /** Past the shutdown's deadline: every retiring peer closes by force at once; owner thread. */
    void hurryRetiring(long deadlineNanos)
    {
        for (UcxPeer peer : retiring) {
            peer.failed = true;
            peer.retireDeadlineNanos = deadlineNanos;
        }
    }

    /** Abandons whatever UCX did not finish in time at shutdown; destroying the worker ends it. Owner thread. */
    void cutOff()
    {
        for (Setup setup : setups) {
            UcpWorker.requestFree(setup.request());
            setup.answered().completeExceptionally(new KvBridgeException(ErrorCode.CLOSED, guard.description()
                    + " was closed while connecting to peer '" + setup.peer().name() + "'"));
        }
        setups.clear();
        for (UcxPeer peer : retiring) {
            if (peer.endpoint != 0) {
                UcpEndpoint.epCloseNbx(peer.endpoint, true, peer.token);
                peer.endpoint = 0;
            }
            destroyAllKeys(peer);
        }
        retiring.clear();
    }

    /** @return peers connected and not disconnected; any thread. */
    int peerCount()
    {
        synchronized (peers) {
            return peers.size();
        }
    }

    /** Forgets every peer once the instance closed; any thread, after the owner stopped. */
    void closeAll()
    {
        synchronized (peers) {
            for (UcxPeer peer : peers) {
                peer.listed = false;
                peer.markUnusable("this transport was closed");
            }
            peers.clear();
        }
    }
}
