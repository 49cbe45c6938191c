package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a rank keeps of the remote engines it works with: a transport peer per remote rank (also
 * found by its agent name, for notifications), prepared lists and transfer plans. Every entry is
 * cached under {@code "<remote key>|..."}, so one remote side channel's entries are dropped
 * together when it is evicted, fails or restarts. Worker thread only.
 */
final class RemoteCache
{
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCache.class);

    private final String name;
    private final TransferBackend transport;
    private final PeerSessions sessions;
    private final PlanFactory planFactory;
    private final Map<String, Peer> peers = new HashMap<>();
    private final Map<String, Peer> peersByAgent = new HashMap<>();
    private final Map<String, Prepared> lists = new HashMap<>();
    private final Map<String, List<TransferPlan>> plans = new HashMap<>();

    RemoteCache(String name, TransferBackend transport, PeerSessions sessions, PlanFactory planFactory)
    {
        this.name = requireNonNull(name, "name is null");
        this.transport = requireNonNull(transport, "transport is null");
        this.sessions = requireNonNull(sessions, "sessions is null");
        this.planFactory = requireNonNull(planFactory, "planFactory is null");
    }

    /** Connects to a remote rank's transport once and keeps the peer. */
    Peer peer(String remoteKey, RemoteEngine engine, RankKey rank)
    {
        String key = remoteKey + "|" + rank;
        Peer peer = peers.get(key);
        if (peer == null) {
            SessionKey session = engine.session(rank);
            peer = transport.connect(engine.metadata(rank).transportMetadata());
            peers.put(key, peer);
            peersByAgent.put(peer.name(), peer);
            sessions.bind(peer, session);
        }
        return peer;
    }

    /**
     * Connects to a remote rank afresh after its cached peer refused a notification: a peer whose
     * endpoint failed (it was stopped and its transfer cancelled, or it restarted) stays unusable.
     * Every peer and list of that remote side channel is dropped.
     *
     * @return the new peer, or null when it cannot be reached.
     */
    Peer reconnect(String remoteKey, RemoteEngine engine, RankKey rank)
    {
        forget(remoteKey + "|");
        try {
            return peer(remoteKey, engine, rank);
        }
        catch (KvBridgeException e) {
            LOG.warn("{}: cannot reconnect to {} rank {}: {}", name, engine.engineId(), rank, e.getMessage());
            return null;
        }
    }

    /** {@return the peer connected under a transport agent name, or null} */
    Peer peerByAgent(String agent)
    {
        return peersByAgent.get(agent);
    }

    /**
     * A prepared list with the descriptors it was prepared from (their lengths give each transfer's
     * bytes) and the peer whose memory it describes (null for this rank's own), whose session seals
     * a notification attached to a transfer into it.
     */
    record Prepared(PreparedList list, DescriptorList descriptors, Peer peer)
    {
    }

    /** Prepares a list once per key and keeps it until the remote engine is evicted or the rank closes. */
    Prepared prepared(String key, Peer peer, Supplier<DescriptorList> descriptors)
    {
        Prepared prepared = lists.get(key);
        if (prepared == null) {
            DescriptorList built = descriptors.get();
            prepared = new Prepared(peer == null ? transport.prepareLocal(built) : transport.prepareRemote(peer, built), built, peer);
            lists.put(key, prepared);
        }
        return prepared;
    }

    /** Plans the transfers between two geometries once per key and keeps them with the key's other entries. */
    List<TransferPlan> plans(String key, CacheGeometry consumer, CacheGeometry producer)
    {
        List<TransferPlan> cached = plans.get(key);
        if (cached == null) {
            cached = planFactory.plans(consumer, producer);
            plans.put(key, cached);
        }
        return cached;
    }

    /** Drops, releases and disconnects everything cached under a key prefix, such as one remote side channel's {@code "<remote key>|"}. */
    void forget(String prefix)
    {
        for (Iterator<Map.Entry<String, Prepared>> it = lists.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Prepared> entry = it.next();
            if (entry.getKey().startsWith(prefix)) {
                releaseQuietly(entry.getValue().list());
                it.remove();
            }
        }
        plans.keySet().removeIf(key -> key.startsWith(prefix));
        for (Iterator<Map.Entry<String, Peer>> it = peers.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Peer> entry = it.next();
            if (entry.getKey().startsWith(prefix)) {
                peersByAgent.remove(entry.getValue().name());
                sessions.unbind(entry.getValue());
                disconnectQuietly(entry.getValue());
                it.remove();
            }
        }
    }

    private void releaseQuietly(PreparedList list)
    {
        try {
            transport.releasePrepared(list);
        }
        catch (RuntimeException e) {
            LOG.debug("{}: releasing a prepared list failed: {}", name, e.toString());
        }
    }

    private void disconnectQuietly(Peer peer)
    {
        try {
            transport.disconnect(peer);
        }
        catch (RuntimeException e) {
            LOG.debug("{}: disconnecting {} failed: {}", name, peer.name(), e.toString());
        }
    }

    /** Releases every list and disconnects every peer, at close. */
    void releaseAll()
    {
        for (Prepared prepared : lists.values()) {
            releaseQuietly(prepared.list());
        }
        lists.clear();
        for (Peer peer : peers.values()) {
            disconnectQuietly(peer);
        }
        peers.clear();
        peersByAgent.clear();
    }
}
