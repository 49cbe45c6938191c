package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.nixl.ffm.NixlAgent;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.transport.InstanceGuard;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;

/**
 * The peers of one {@code nixl} instance and the metadata that connects them: this instance's own
 * (agent name, registered allocations, NIXL's opaque blob), loading a peer's into NIXL, and
 * forgetting a peer in the order NIXL needs: its running transfers fail, its lists are released,
 * then NIXL invalidates its metadata.
 *
 * <p>Threads: the map belongs to the owner thread; the count is read from any thread.
 */
final class NixlPeers
{
    private static final String DISCONNECTED = "it was disconnected";

    private final InstanceGuard guard;
    private final NixlOwner owner;
    private final NixlMemoryRegistry memory;
    private final NixlTransfers transfers;
    private final NixlLists lists;
    // owner thread only
    private final Map<String, NixlPeer> peers = new HashMap<>();
    private volatile int count;

    NixlPeers(InstanceGuard guard, NixlOwner owner, NixlMemoryRegistry memory, NixlTransfers transfers, NixlLists lists)
    {
        this.guard = requireNonNull(guard, "guard is null");
        this.owner = requireNonNull(owner, "owner is null");
        this.memory = requireNonNull(memory, "memory is null");
        this.transfers = requireNonNull(transfers, "transfers is null");
        this.lists = requireNonNull(lists, "lists is null");
    }

    byte[] localMetadata()
    {
        guard.checkOpen();
        return owner.call(() -> {
            guard.checkOpen();
            byte[] blob = owner.agent().localMetadata();
            return new NixlMetadata(guard.agentName(), RegionTable.of(memory.allocations()), blob).encode();
        });
    }

    Peer connect(byte[] peerMetadata)
    {
        guard.checkOpen();
        NixlMetadata metadata = NixlMetadata.decode(peerMetadata);
        if (metadata.agentName().equals(guard.agentName())) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "the metadata is this instance's own (agent name=" + guard.agentName()
                    + "); connect to another instance");
        }
        return owner.call(() -> {
            guard.checkOpen();
            NixlAgent agent = owner.agent();
            NixlPeer known = peers.get(metadata.agentName());
            if (known != null && known.unusableReason() != null) {
                // NIXL dropped it: the old peer and its lists stay unusable, fresh metadata makes a new one
                lists.releaseAll(known);
                peers.remove(known.name(), known);
                if (agent.remoteMetadataLoaded(known.name())) {
                    // unusable while NIXL still holds it (a refused notification): the fresh blob must not meet the stale one
                    agent.invalidateRemoteMetadata(known.name());
                }
                known = null;
            }
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
                known.refresh(metadata.regions());
                return known;
            }
            NixlPeer peer = new NixlPeer(guard, loaded, metadata.regions());
            peers.put(loaded, peer);
            count = peers.size();
            return peer;
        });
    }

    void disconnect(NixlPeer nixlPeer)
    {
        if (guard.isClosed()) {
            // close() already disconnected every peer
            return;
        }
        owner.call(() -> {
            guard.checkOpen();
            if (peers.get(nixlPeer.name()) == nixlPeer) {
                forget(nixlPeer);
            }
            return null;
        });
    }

    private void forget(NixlPeer peer)
    {
        peer.markUnusable(DISCONNECTED);
        transfers.failPeer(peer, new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peer.name() + "' was disconnected while the transfer ran"));
        lists.releaseAll(peer);
        peers.remove(peer.name(), peer);
        count = peers.size();
        owner.agent().invalidateRemoteMetadata(peer.name());
    }

    /**
     * Checks that a peer can still be told something; owner thread only.
     *
     * @param peer the peer.
     * @throws KvBridgeException {@code PEER_UNKNOWN} once it was disconnected.
     */
    void checkUsable(NixlPeer peer)
    {
        String unusable = peer.unusableReason();
        if (unusable != null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peer.name() + "' cannot be used: " + unusable + "; notification not sent");
        }
    }

    /**
     * Lets NIXL forget every peer at close, going on past failures; owner thread only, after the
     * transfers and lists are gone.
     *
     * @return the first failure, others suppressed in it, or null.
     */
    RuntimeException closeAll()
    {
        RuntimeException first = null;
        for (NixlPeer peer : new ArrayList<>(peers.values())) {
            peer.markUnusable(guard.description() + " was closed");
            first = NixlShutdown.attempt(first, () -> owner.agent().invalidateRemoteMetadata(peer.name()));
        }
        peers.clear();
        count = 0;
        return first;
    }

    /** @return peers connected. */
    int size()
    {
        return count;
    }
}
