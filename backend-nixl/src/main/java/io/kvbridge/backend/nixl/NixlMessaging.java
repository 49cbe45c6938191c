package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;

/**
 * Notifications of one {@code nixl} instance: sent through NIXL on the owner thread, and received
 * by the owner, which drains NIXL's notification map into the inbox between rounds of work (NIXL's C
 * API has nothing to wait on), waking the thread given to {@code wakeOnProgress}; callers take them
 * from the inbox through the toolkit's {@code drainNotifications}.
 *
 * <p>Threads: any; the native calls run on the owner thread.
 */
final class NixlMessaging
{
    private final InstanceGuard guard;
    private final NixlOwner owner;
    private final NixlPeers peers;
    private final NixlPeerLoss peerLoss;
    private final NotificationSink toInbox;

    NixlMessaging(InstanceGuard guard, NixlOwner owner, NixlPeers peers, Inbox inbox)
    {
        this.toInbox = requireNonNull(inbox, "inbox is null")::add;
        this.guard = requireNonNull(guard, "guard is null");
        this.owner = requireNonNull(owner, "owner is null");
        this.peers = requireNonNull(peers, "peers is null");
        this.peerLoss = new NixlPeerLoss(owner);
    }

    /** Sends a message the instance checked (peer its own, instance open, length within the limit). */
    void notify(NixlPeer nixlPeer, byte[] message)
    {
        owner.call(() -> {
            guard.checkOpen();
            peers.checkUsable(nixlPeer);
            try {
                owner.agent().sendNotification(nixlPeer.name(), message);
            }
            catch (KvBridgeException e) {
                throw peerLoss.notificationFailure(nixlPeer, e);
            }
            return null;
        });
    }

    /**
     * Moves what NIXL received into the inbox, which wakes its waiter; owner thread only.
     *
     * @return whether anything arrived.
     */
    boolean receive()
    {
        return !guard.isClosed() && owner.agent().drainNotifications(toInbox) > 0;
    }

}
