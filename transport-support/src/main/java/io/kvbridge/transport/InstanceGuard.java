package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One transport instance's identity and open/closed state, and the opaque owner token its peers and
 * prepared lists carry: an object is accepted back only by the guard that made it
 * ({@code FOREIGN_HANDLE} otherwise), so one instance never acts on another's peer or list.
 *
 * <p>Thread-safe.
 */
public final class InstanceGuard
{
    private final String transport;
    private final String agentName;
    private final String description;
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * Creates the guard of an open instance.
     *
     * @param transport the transport's name, such as {@code ucx}.
     * @param agentName the instance's agent name.
     */
    public InstanceGuard(String transport, String agentName)
    {
        this.transport = requireNonNull(transport, "transport is null");
        this.agentName = requireNonNull(agentName, "agentName is null");
        this.description = transport + " transport '" + agentName + "'";
    }

    /** {@return the transport's name} */
    public String transport()
    {
        return transport;
    }

    /** {@return the instance's agent name} */
    public String agentName()
    {
        return agentName;
    }

    /** {@return how errors name the instance: {@code ucx transport 'agent'}} */
    public String description()
    {
        return description;
    }

    /**
     * Checks that the instance is still open.
     *
     * @throws KvBridgeException {@code CLOSED} once the instance is closed.
     */
    public void checkOpen()
    {
        if (closed.get()) {
            throw closedError();
        }
    }

    /** {@return the error every call after close throws} */
    public KvBridgeException closedError()
    {
        return new KvBridgeException(ErrorCode.CLOSED, description + " is closed");
    }

    /** {@return true once {@link #close()} was called} */
    public boolean isClosed()
    {
        return closed.get();
    }

    /**
     * Marks the instance closed.
     *
     * @return true for the first call only, which does the closing.
     */
    public boolean close()
    {
        return closed.compareAndSet(false, true);
    }

    /** {@return the closed problem for {@code TransferBackend.problem()}, or empty while open} */
    public Optional<String> closedProblem()
    {
        return closed.get() ? Optional.of(description + " is closed") : Optional.empty();
    }

    /**
     * Accepts a peer only when this instance connected it.
     *
     * @param <P> the transport's peer class.
     * @param peer from the caller; untrusted.
     * @param type the transport's peer class.
     * @return the peer, typed.
     * @throws KvBridgeException {@code FOREIGN_HANDLE} for another instance's or transport's peer.
     */
    public <P extends TransportPeer> P own(Peer peer, Class<P> type)
    {
        requireNonNull(peer, "peer is null");
        if (!type.isInstance(peer) || ((TransportPeer) peer).owner() != this) {
            throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "peer " + peer + " was not connected by " + description);
        }
        return type.cast(peer);
    }

    /**
     * Accepts a prepared list only when this instance prepared it.
     *
     * @param <L> the transport's list class.
     * @param list from the caller; untrusted.
     * @param type the transport's list class.
     * @return the list, typed.
     * @throws KvBridgeException {@code FOREIGN_HANDLE} for another instance's or transport's list.
     */
    public <L extends OwnedPreparedList> L own(PreparedList list, Class<L> type)
    {
        requireNonNull(list, "prepared list is null");
        if (!type.isInstance(list) || ((OwnedPreparedList) list).owner() != this) {
            throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "prepared list was not prepared by " + description);
        }
        return type.cast(list);
    }

    @Override
    public String toString()
    {
        return description;
    }
}
