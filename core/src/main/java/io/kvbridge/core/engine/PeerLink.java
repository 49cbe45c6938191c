package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.Arrays;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A rank's link to one remote rank: the remote engine's verified metadata (and so its epoch) as
 * the handshake that made the link learned it, the transport peer, the notification session what
 * this rank sends over the link is sealed with, and the lists prepared for transfers over it, on
 * either side. {@link #close()} releases all of it; the remote engine's {@link PeerLinks} entry
 * closes its links together when the engine is evicted, fails or restarts. Worker thread only.
 */
final class PeerLink
{
    private static final Logger LOG = LoggerFactory.getLogger(PeerLink.class);
    private static final Prepared[][] NONE = new Prepared[0][];

    /**
     * A prepared list with the descriptors it was prepared from (their lengths give each transfer's bytes).
     *
     * @param list the transport's handle.
     * @param descriptors what it was prepared from.
     */
    record Prepared(PreparedList list, DescriptorList descriptors)
    {
    }

    private final RemoteKey remote;
    private final RemoteEngine engine;
    private final RankKey rank;
    private final Peer peer;
    private final TransferBackend transport;
    private final PeerSessions sessions;
    // the rank that holds the link, for logs
    private final String owner;
    // by plan index, then slot: lists of this rank's own memory, and of the remote rank's
    private Prepared[][] mine = NONE;
    private Prepared[][] theirs = NONE;

    private PeerLink(RemoteKey remote, RemoteEngine engine, RankKey rank, Peer peer, TransferBackend transport, PeerSessions sessions, String owner)
    {
        this.owner = owner;
        this.remote = remote;
        this.engine = engine;
        this.rank = rank;
        this.peer = peer;
        this.transport = transport;
        this.sessions = sessions;
    }

    /**
     * Connects to a remote rank and binds the notification session its handshake opened.
     *
     * @throws KvBridgeException when the handshake opened no session with the rank or the transport cannot connect.
     */
    static PeerLink connect(RemoteKey remote, RemoteEngine engine, RankKey rank, TransferBackend transport, PeerSessions sessions, String owner)
    {
        requireNonNull(remote, "remote is null");
        requireNonNull(rank, "rank is null");
        // asked before connecting: a rank without a session is never connected
        SessionKey session = engine.session(rank);
        Peer peer = transport.connect(engine.metadata(rank).transportMetadata());
        sessions.bind(peer, session);
        return new PeerLink(remote, engine, rank, peer, transport, sessions, owner);
    }

    RemoteKey remote()
    {
        return remote;
    }

    RemoteEngine engine()
    {
        return engine;
    }

    RankKey rank()
    {
        return rank;
    }

    Peer peer()
    {
        return peer;
    }

    /** {@return the transport agent name of the remote rank, which its notifications name as sender} */
    String agent()
    {
        return peer.name();
    }

    /** Seals a notification for the remote rank with the link's session. */
    byte[] seal(byte[] body)
    {
        return sessions.seal(peer, body);
    }

    /** A list of this rank's own memory for transfers over the link, prepared once per plan and slot. */
    Prepared mine(int plan, int slot, Supplier<DescriptorList> descriptors)
    {
        mine = grown(mine, plan, slot);
        Prepared prepared = mine[plan][slot];
        if (prepared == null) {
            DescriptorList built = descriptors.get();
            prepared = new Prepared(transport.prepareLocal(built), built);
            mine[plan][slot] = prepared;
        }
        return prepared;
    }

    /** A list of the remote rank's memory for transfers over the link, prepared once per plan and slot. */
    Prepared theirs(int plan, int slot, Supplier<DescriptorList> descriptors)
    {
        theirs = grown(theirs, plan, slot);
        Prepared prepared = theirs[plan][slot];
        if (prepared == null) {
            DescriptorList built = descriptors.get();
            prepared = new Prepared(transport.prepareRemote(peer, built), built);
            theirs[plan][slot] = prepared;
        }
        return prepared;
    }

    private static Prepared[][] grown(Prepared[][] lists, int plan, int slot)
    {
        if (plan < lists.length && slot < lists[plan].length) {
            return lists;
        }
        Prepared[][] grown = plan < lists.length ? lists : Arrays.copyOf(lists, plan + 1);
        for (int p = 0; p < grown.length; p++) {
            if (grown[p] == null) {
                grown[p] = new Prepared[0];
            }
        }
        if (slot >= grown[plan].length) {
            grown[plan] = Arrays.copyOf(grown[plan], slot + 1);
        }
        return grown;
    }

    /** Releases the link's lists, unbinds its session and disconnects its peer; failures are logged, never thrown. */
    void close()
    {
        releaseAll(mine);
        releaseAll(theirs);
        mine = NONE;
        theirs = NONE;
        sessions.unbind(peer);
        try {
            transport.disconnect(peer);
        }
        catch (RuntimeException e) {
            LOG.debug("{}: disconnecting {} failed: {}", owner, peer.name(), e.toString());
        }
    }

    private void releaseAll(Prepared[][] lists)
    {
        for (Prepared[] ofPlan : lists) {
            for (Prepared prepared : ofPlan) {
                if (prepared == null) {
                    continue;
                }
                try {
                    transport.releasePrepared(prepared.list());
                }
                catch (RuntimeException e) {
                    LOG.debug("{}: releasing a prepared list failed: {}", owner, e.toString());
                }
            }
        }
    }

    @Override
    public String toString()
    {
        return remote + " rank " + rank;
    }
}
