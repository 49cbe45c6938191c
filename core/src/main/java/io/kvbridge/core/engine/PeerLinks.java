package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The links of one rank, by remote engine: each remote engine (a {@link RemoteKey}) owns its
 * {@link PeerLink}s, one per remote rank, and the transfer plans made against its ranks'
 * geometries. Closing a remote engine closes its links and forgets its plans together, when it is
 * evicted, one of its peers fails, or it restarts. Links are also found by the agent name their
 * notifications carry. Worker thread only.
 */
final class PeerLinks
{
    private static final Logger LOG = LoggerFactory.getLogger(PeerLinks.class);

    /** What a rank keeps of one remote engine. */
    private static final class Remote
    {
        final Map<RankKey, PeerLink> links = new HashMap<>();
        // plans against a remote rank's geometry; made without connecting to it
        final Map<RankKey, List<LinkPlan>> plans = new HashMap<>();
    }

    private final String name;
    private final TransferBackend transport;
    private final PeerSessions sessions;
    private final PlanFactory planFactory;
    private final Map<RemoteKey, Remote> remotes = new HashMap<>();
    private final Map<String, PeerLink> byAgent = new HashMap<>();

    PeerLinks(String name, TransferBackend transport, PeerSessions sessions, PlanFactory planFactory)
    {
        this.name = requireNonNull(name, "name is null");
        this.transport = requireNonNull(transport, "transport is null");
        this.sessions = requireNonNull(sessions, "sessions is null");
        this.planFactory = requireNonNull(planFactory, "planFactory is null");
    }

    private Remote remote(RemoteKey key)
    {
        Remote remote = remotes.get(key);
        if (remote == null) {
            remote = new Remote();
            remotes.put(key, remote);
        }
        return remote;
    }

    /** {@return the link to a remote rank, connected the first time it is asked for} */
    PeerLink link(RemoteKey key, RemoteEngine engine, RankKey rank)
    {
        Remote remote = remote(key);
        PeerLink link = remote.links.get(rank);
        if (link == null) {
            link = PeerLink.connect(key, engine, rank, transport, sessions, name);
            remote.links.put(rank, link);
            byAgent.put(link.agent(), link);
        }
        return link;
    }

    /**
     * Connects to a remote rank afresh after its link refused a notification: a peer whose endpoint
     * failed (it was stopped and its transfer cancelled, or it restarted) stays unusable. Every link
     * of that remote engine is closed first.
     *
     * @return the new link, or null when the rank cannot be reached.
     */
    PeerLink reconnect(RemoteKey key, RemoteEngine engine, RankKey rank)
    {
        close(key);
        try {
            return link(key, engine, rank);
        }
        catch (KvBridgeException e) {
            LOG.warn("{}: cannot reconnect to {} rank {}: {}", name, engine.engineId(), rank, e.getMessage());
            return null;
        }
    }

    /** {@return the link whose remote rank's transport has an agent name, or null} */
    PeerLink byAgent(String agent)
    {
        return byAgent.get(agent);
    }

    /**
     * Plans the transfers with a remote rank once, as this side sees them: the remote rank's
     * geometry is fixed for as long as its engine is known, and a rank is either consumer or
     * producer to it.
     *
     * @param mine this rank's geometry.
     * @param theirs the remote rank's.
     * @param consumer whether this rank is the consumer.
     */
    List<LinkPlan> plans(RemoteKey key, RankKey rank, CacheGeometry mine, CacheGeometry theirs, boolean consumer)
    {
        Remote remote = remote(key);
        List<LinkPlan> plans = remote.plans.get(rank);
        if (plans == null) {
            List<TransferPlan> made = consumer ? planFactory.plans(mine, theirs) : planFactory.plans(theirs, mine);
            List<LinkPlan> seen = new ArrayList<>(made.size());
            for (int p = 0; p < made.size(); p++) {
                seen.add(new LinkPlan(made.get(p), p, consumer));
            }
            plans = List.copyOf(seen);
            remote.plans.put(rank, plans);
        }
        return plans;
    }

    /** Closes every link of a remote engine and forgets its plans; an unknown one is ignored. */
    void close(RemoteKey key)
    {
        Remote remote = remotes.remove(key);
        if (remote != null) {
            closeLinks(remote);
        }
    }

    /** Closes every link, at close. */
    void closeAll()
    {
        for (Remote remote : remotes.values()) {
            closeLinks(remote);
        }
        remotes.clear();
    }

    private void closeLinks(Remote remote)
    {
        for (PeerLink link : remote.links.values()) {
            byAgent.remove(link.agent(), link);
            link.close();
        }
    }
}
