package io.kvbridge.backend.cudaipc;

import io.kvbridge.backend.cudaipc.LocalMemory.LocalRegistration;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What a {@code cuda-ipc} instance does with what its control channel hears: notifications into
 * the bounded inbox, descriptors of exported regions for the peers their grants let in, and the
 * peers' hang-ups, closes and revokes turned into retired or detached mappings, answered once the
 * copies against them ended.
 *
 * <p>Threads: the control channel's thread; the owner is asked through calls bounded by the close timeout.
 */
final class CudaIpcEvents implements ControlEvents
{
    private final InstanceGuard guard;
    private final Inbox inbox;
    private final NotificationBound notificationBound;
    private final Map<Integer, LocalRegistration> exported;
    private final ExportGrants exportGrants;
    private final Map<Integer, Set<String>> passedTo;
    private final Set<CudaIpcPeer> peers;
    private final CudaIpcEngine engine;
    private final long closeTimeoutNanos;
    private ControlChannel control;

    CudaIpcEvents(InstanceGuard guard, Inbox inbox, NotificationBound notificationBound, Map<Integer, LocalRegistration> exported,
            ExportGrants exportGrants, Map<Integer, Set<String>> passedTo, Set<CudaIpcPeer> peers, CudaIpcEngine engine, long closeTimeoutNanos)
    {
        this.guard = guard;
        this.inbox = inbox;
        this.notificationBound = notificationBound;
        this.exported = exported;
        this.exportGrants = exportGrants;
        this.passedTo = passedTo;
        this.peers = peers;
        this.engine = engine;
        this.closeTimeoutNanos = closeTimeoutNanos;
    }

    /** The channel these events come from, once it exists. */
    void attach(ControlChannel channel)
    {
        this.control = channel;
    }

    @Override
    public void notification(String sender, byte[] message)
    {
        if (!guard.isClosed() && notificationBound.admit(sender, message.length)) {
            inbox.add(sender, message);
        }
    }

    @Override
    public void peerGone(String agent, String reason)
    {
        peerDied(agent, reason);
    }

    @Override
    public int exportedFd(int regionId, byte[] key, int keyLength, String peer)
    {
        LocalRegistration registration = exported.get(regionId);
        if (registration == null || !registration.live()) {
            return -1;
        }
        if (!exportGrants.covers(key, keyLength, regionId)) {
            exportGrants.refused(peer, "asked for the descriptor of region " + regionId + " under " + (keyLength == 0 ? "no grant key"
                    : "a key of " + keyLength + " bytes") + " that no live grant in that region has");
            return -1;
        }
        passedTo.computeIfAbsent(regionId, ignored -> ConcurrentHashMap.newKeySet()).add(peer);
        return registration.fd;
    }

    @Override
    public void peerClosing(ControlChannel.Link link)
    {
        peerIsClosing(link);
    }

    @Override
    public void peerRevoked(ControlChannel.Link link, int[] regionIds)
    {
        peerRevokedRegions(link, regionIds);
    }

    @Override
    public int knownPid(String agent)
    {
        for (CudaIpcPeer peer : peers) {
            if (peer.name().equals(agent) && !peer.sameProcess) {
                return peer.metadata.pid();
            }
        }
        return -1;
    }

    private void peerDied(String agent, String reason)
    {
        List<CudaIpcPeer> gone = new ArrayList<>();
        for (CudaIpcPeer peer : peers) {
            if (peer.name().equals(agent) && peer.markUnusable("its process is gone or closed its control connection (" + reason + ")")) {
                gone.add(peer);
            }
        }
        if (gone.isEmpty() || guard.isClosed()) {
            return;
        }
        try {
            engine.call(() -> {
                gone.forEach(engine::retire);
                return null;
            });
        }
        catch (KvBridgeException closed) {
            // the instance is closing: close() releases the mappings
        }
    }

    /**
     * A peer's instance closes: its memory is unmapped here after the copies running against it,
     * then the peer is told; the control thread asks the owner and waits no longer than the close
     * timeout. A closing instance answers by its link's hang-up, after its own mappings are gone.
     */
    private void peerIsClosing(ControlChannel.Link link)
    {
        List<CudaIpcPeer> closing = new ArrayList<>();
        for (CudaIpcPeer peer : peers) {
            if (peer.link == link) {
                peer.markUnusable("its instance is closing");
                closing.add(peer);
            }
        }
        if (closing.isEmpty() || (guard.isClosed() && closing.stream().allMatch(peer -> peer.sameProcess))) {
            // nothing of it is mapped here (disconnected, or in this process and this instance is closing too)
            control.unmapped(link);
            return;
        }
        if (guard.isClosed()) {
            return;
        }
        closing.forEach(peer -> peer.acknowledgeUnmap = true);
        try {
            engine.call(() -> {
                closing.forEach(engine::retire);
                return null;
            }, closeTimeoutNanos, "unmapping the memory of closing peer '" + closing.getFirst().name() + "'");
        }
        catch (KvBridgeException closed) {
            // this instance closes meanwhile, or its owner is stuck: the link's hang-up answers the peer
        }
    }

    /** A peer revoked its last grant in some regions: their mappings close here after the copies running against the peer, then it is told. */
    private void peerRevokedRegions(ControlChannel.Link link, int[] regionIds)
    {
        List<CudaIpcPeer> revoking = new ArrayList<>();
        for (CudaIpcPeer peer : peers) {
            if (peer.link == link && !peer.sameProcess) {
                revoking.add(peer);
            }
        }
        if (revoking.isEmpty() || guard.isClosed()) {
            // nothing of it is mapped here, or this instance is closing and its link's hang-up answers
            if (revoking.isEmpty()) {
                control.regionsUnmapped(link);
            }
            return;
        }
        try {
            engine.call(() -> {
                revoking.forEach(peer -> engine.detach(peer, regionIds));
                return null;
            }, closeTimeoutNanos, "unmapping regions peer '" + revoking.getFirst().name() + "' revoked");
        }
        catch (KvBridgeException closed) {
            // this instance closes meanwhile, or its owner is stuck: the link's hang-up answers the peer
        }
    }
}
