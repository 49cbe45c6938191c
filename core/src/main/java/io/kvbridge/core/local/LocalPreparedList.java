package io.kvbridge.core.local;

import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.transport.Coverage;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnedPreparedList;

/**
 * A descriptor list checked against the registrations of the side that owns the memory: this
 * instance for a local list, the peer instance for a remote one. Region ids are registration ids,
 * so runs never merge across two registrations that merely happen to be adjacent. Immutable apart
 * from the released flag; any thread.
 */
final class LocalPreparedList extends OwnedPreparedList
{
    LocalPreparedList(InstanceGuard owner, LocalPeer peer, MemoryKind kind, int device, long[] addresses, long[] lengths, Coverage coverage)
    {
        // a remote list is usable only while the peer's registrations it lies in are live: they
        // count as this list's registrations, since the peer's memory is in this JVM
        super(owner, peer, kind, device, addresses, lengths, coverage.registrationIds(), coverage.registrations());
    }
}
