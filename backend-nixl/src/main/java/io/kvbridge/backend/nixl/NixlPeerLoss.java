package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.TransportPeer;

/**
 * Reads a failure NIXL reported for a call about one peer. NIXL drops a peer's metadata by itself
 * once a transfer found the peer disconnected or exited, and 1.4.0 answers every later request to
 * it with a bare {@code -2}; so after a failure NIXL is asked whether it still holds the peer, and
 * if not the peer is marked unusable, so every later call reports {@code PEER_UNKNOWN} naming it
 * before NIXL is called. Every failure comes back naming the peer. Owner thread only.
 */
final class NixlPeerLoss
{
    static final String DROPPED = "NIXL dropped its metadata after a call to it failed (the peer disconnected or exited)";
    static final String NOTIFICATION_REFUSED = "NIXL refused a notification to it (its connection failed: the peer disconnected or exited)";

    private final NixlOwner owner;

    NixlPeerLoss(NixlOwner owner)
    {
        this.owner = requireNonNull(owner, "owner is null");
    }

    /**
     * Names the peer in a failure of a transfer to it and finds out whether NIXL dropped it. A
     * transfer can fail for reasons of its own, so a peer NIXL still holds stays usable.
     *
     * @param peer the peer the failing request was about.
     * @param failure what NIXL reported.
     * @return the failure to report: {@code TRANSFER_FAILED} stays (the request that found the peer
     *     gone failed as a transfer), another failure after the peer was dropped is
     *     {@code PEER_UNKNOWN}, any other keeps its code.
     */
    KvBridgeException transferFailure(TransportPeer peer, KvBridgeException failure)
    {
        return failure(peer, failure, false);
    }

    /**
     * Names the peer in a notification NIXL refused. NIXL 1.4.0 keeps the metadata of a peer that
     * died when a notification to it fails (only a failed transfer drops it), yet the failure means
     * the connection is gone; so the peer is marked unusable here too, unless NIXL refused the
     * call's arguments.
     *
     * @param peer the peer the notification was for.
     * @param failure what NIXL reported.
     * @return the failure to report: {@code PEER_UNKNOWN} once the peer is unusable.
     */
    KvBridgeException notificationFailure(TransportPeer peer, KvBridgeException failure)
    {
        return failure(peer, failure, failure.code() != ErrorCode.INVALID_ARGUMENT);
    }

    private KvBridgeException failure(TransportPeer peer, KvBridgeException failure, boolean connectionLost)
    {
        if (peer.unusableReason() == null) {
            boolean loaded;
            try {
                loaded = owner.agent().remoteMetadataLoaded(peer.name());
            }
            catch (KvBridgeException e) {
                failure.addSuppressed(e);
                loaded = true;
            }
            if (loaded && !connectionLost) {
                return new KvBridgeException(failure.code(), "peer '" + peer.name() + "' (NIXL still holds its metadata): " + failure.getMessage(), failure);
            }
            peer.markUnusable(loaded ? NOTIFICATION_REFUSED : DROPPED);
        }
        ErrorCode code = failure.code() == ErrorCode.TRANSFER_FAILED ? ErrorCode.TRANSFER_FAILED : ErrorCode.PEER_UNKNOWN;
        return new KvBridgeException(code, "peer '" + peer.name() + "': " + peer.unusableReason() + "; disconnect it and connect again with fresh metadata: "
                + failure.getMessage(), failure);
    }
}
