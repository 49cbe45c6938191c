package io.kvbridge.core.local;

import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;

/** A descriptor list checked against the registrations of the side that owns the memory. */
final class LocalPreparedList implements PreparedList
{
    final LocalTransferBackend owner;
    final LocalPeer peer;
    final MemoryKind kind;
    final long[] addresses;
    final long[] lengths;
    // per descriptor, the index of its registration in registrations: runs never merge across them
    final int[] registrationIds;
    // the distinct registrations the descriptors lie in: all must still be live when bytes move
    final LocalRegistration[] registrations;
    volatile boolean released;

    LocalPreparedList(LocalTransferBackend owner, LocalPeer peer, MemoryKind kind, long[] addresses, long[] lengths, int[] registrationIds,
            LocalRegistration[] registrations)
    {
        this.owner = owner;
        this.peer = peer;
        this.kind = kind;
        this.addresses = addresses;
        this.lengths = lengths;
        this.registrationIds = registrationIds;
        this.registrations = registrations;
    }

    @Override
    public int size()
    {
        return addresses.length;
    }

    @Override
    public MemoryKind kind()
    {
        return kind;
    }

    @Override
    public Peer peer()
    {
        return peer;
    }

    /** Returns why the list cannot be used now, or null. */
    String unusableReason()
    {
        if (released) {
            return "the prepared list was released";
        }
        if (peer != null && !peer.usable()) {
            return "peer '" + peer.name() + "' was disconnected or closed";
        }
        for (LocalRegistration registration : registrations) {
            if (!registration.live) {
                return "allocation " + registration.allocation + " was deregistered";
            }
        }
        return null;
    }
}
