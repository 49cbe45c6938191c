package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.Peer;

/**
 * A connected peer as every transport keeps it: the instance that connected it (its owner token),
 * the peer's agent name, and why it can no longer be used, the first reason only. Transports extend
 * it with their endpoints and remote keys.
 *
 * <p>Threads: any; the reason is written once under the peer's monitor and read without it.
 */
public abstract class TransportPeer implements Peer
{
    private final InstanceGuard owner;
    private final String name;
    private volatile String unusable;

    /**
     * Creates a usable peer.
     *
     * @param owner the connecting instance's guard.
     * @param name the peer's agent name.
     */
    protected TransportPeer(InstanceGuard owner, String name)
    {
        this.owner = requireNonNull(owner, "owner is null");
        this.name = requireNonNull(name, "name is null");
    }

    /** {@return the guard of the instance that connected the peer} */
    public final InstanceGuard owner()
    {
        return owner;
    }

    @Override
    public final String name()
    {
        return name;
    }

    /**
     * Tells why the peer can no longer be used; transports that learn of it elsewhere (a closed
     * target in the same JVM) override this and include the recorded reason.
     *
     * @return the reason, or null while usable.
     */
    public String unusableReason()
    {
        return unusable;
    }

    /**
     * Refuses work with a peer that can no longer be used.
     *
     * @param remedy what the caller does about it, such as {@code connect() again}.
     * @throws KvBridgeException {@code PEER_UNKNOWN} naming the peer, the reason and the remedy.
     */
    public final void checkUsable(String remedy)
    {
        String reason = unusableReason();
        if (reason != null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + name + "' cannot be used: " + reason + "; " + remedy);
        }
    }

    /**
     * Records why the peer cannot be used any more; the first reason stays.
     *
     * @param reason such as {@code it was disconnected}.
     * @return true when this was the first reason.
     */
    public final boolean markUnusable(String reason)
    {
        requireNonNull(reason, "reason is null");
        synchronized (this) {
            if (unusable != null) {
                return false;
            }
            unusable = reason;
            return true;
        }
    }

    @Override
    public String toString()
    {
        return getClass().getSimpleName() + "[" + name + "]";
    }
}
