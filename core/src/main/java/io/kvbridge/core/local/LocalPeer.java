package io.kvbridge.core.local;

import io.kvbridge.spi.transfer.Peer;

/** A connected local peer. */
final class LocalPeer implements Peer
{
    final LocalTransferBackend owner;
    final LocalTransferBackend target;
    volatile boolean connected = true;

    LocalPeer(LocalTransferBackend owner, LocalTransferBackend target)
    {
        this.owner = owner;
        this.target = target;
    }

    @Override
    public String name()
    {
        return target.agentName();
    }

    boolean usable()
    {
        return connected && !target.closed();
    }

    @Override
    public String toString()
    {
        return "LocalPeer[" + name() + "]";
    }
}
