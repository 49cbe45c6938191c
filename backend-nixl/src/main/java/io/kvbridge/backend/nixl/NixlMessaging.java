package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnerWork;
import io.kvbridge.transport.PostChecks;

/**
 * Notifications of one {@code nixl} instance: sent through NIXL on the owner thread, and received
 * by draining NIXL's notification map there into the inbox, from which the caller's thread takes
 * them one at a time, so a sink that throws leaves the rest queued.
 *
 * <p>Threads: any; the native calls run on the owner thread, and the reused drain work is handed
 * over by one caller at a time (under its own monitor).
 */
final class NixlMessaging
{
    private final InstanceGuard guard;
    private final NixlOwner owner;
    private final NixlPeers peers;
    private final Inbox inbox;
    private final NixlPeerLoss peerLoss;
    private final NotificationSink toInbox;
    // reused: a drain that finds nothing allocates nothing
    private final Drain drain = new Drain();

    /** Moves what NIXL received into the inbox; on the owner thread. */
    private final class Drain extends OwnerWork
    {
        @Override
        protected void runOnOwner()
        {
            if (!guard.isClosed()) {
                owner.agent().drainNotifications(toInbox);
            }
        }
    }

    NixlMessaging(InstanceGuard guard, NixlOwner owner, NixlPeers peers, Inbox inbox)
    {
        this.inbox = requireNonNull(inbox, "inbox is null");
        this.toInbox = inbox::add;
        this.guard = requireNonNull(guard, "guard is null");
        this.owner = requireNonNull(owner, "owner is null");
        this.peers = requireNonNull(peers, "peers is null");
        this.peerLoss = new NixlPeerLoss(owner);
    }

    void notify(Peer peer, byte[] message)
    {
        NixlPeer nixlPeer = guard.own(peer, NixlPeer.class);
        requireNonNull(message, "message is null");
        guard.checkOpen();
        PostChecks.notification(message, NixlTransfers.MAX_NOTIFICATION_BYTES);
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

    int drain(NotificationSink sink)
    {
        requireNonNull(sink, "sink is null");
        if (!guard.isClosed()) {
            // one hand-over of the reused work at a time; callers rarely drain concurrently
            synchronized (drain) {
                owner.execute(drain);
            }
        }
        return inbox.drain(sink);
    }
}
