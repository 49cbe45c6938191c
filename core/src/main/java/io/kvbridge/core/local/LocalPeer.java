package io.kvbridge.core.local;

import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.TransportPeer;

/** A connected local peer: the other instance itself, unusable once disconnected or once it closes. Any thread. */
final class LocalPeer extends TransportPeer
{
    final LocalTransferBackend target;

    LocalPeer(InstanceGuard owner, LocalTransferBackend target)
    {
        super(owner, target.agentName());
        this.target = target;
    }

    @Override
    public String unusableReason()
    {
        String reason = super.unusableReason();
        if (reason == null && target.closed()) {
            return "it was closed";
        }
        return reason;
    }
}
