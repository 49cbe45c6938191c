package io.kvbridge.backend.tcp;

import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnedPreparedList;
import io.kvbridge.transport.Registration;

/**
 * A checked descriptor list: local ones lie in this instance's registrations (region ids index
 * them), remote ones in the extents the peer advertised. Immutable apart from the released flag.
 */
final class TcpPreparedList extends OwnedPreparedList
{
    TcpPreparedList(InstanceGuard owner, TcpPeer peer, long[] addresses, long[] lengths, int[] regionIds, Registration[] registrations)
    {
        super(owner, peer, MemoryKind.HOST, 0, addresses, lengths, regionIds, registrations);
    }

    /** {@return the registration of local region {@code region}} */
    TcpRegistration memory(int region)
    {
        return (TcpRegistration) registration(region);
    }
}
