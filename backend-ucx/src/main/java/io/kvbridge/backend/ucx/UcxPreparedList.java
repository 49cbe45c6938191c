package io.kvbridge.backend.ucx;

import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;

/**
 * Descriptors checked once against registered memory (local) or the ranges a peer advertised
 * (remote), resolved into primitive arrays: per descriptor its address, length and the UCX key
 * that moves it (the local memory handle, or the peer region's remote key).
 */
final class UcxPreparedList implements PreparedList
{
    final UcxTransferBackend owner;
    final UcxPeer peer;
    final MemoryKind kind;
    final long[] addresses;
    final long[] lengths;
    final long[] keys;
    // the distinct registrations (local) or regions (remote) used: all must stay live
    final UcxRegistration[] registrations;
    final UcxRemoteRegion[] regions;
    volatile boolean released;

    UcxPreparedList(UcxTransferBackend owner, UcxPeer peer, MemoryKind kind, long[] addresses, long[] lengths, long[] keys,
            UcxRegistration[] registrations, UcxRemoteRegion[] regions)
    {
        this.owner = owner;
        this.peer = peer;
        this.kind = kind;
        this.addresses = addresses;
        this.lengths = lengths;
        this.keys = keys;
        this.registrations = registrations;
        this.regions = regions;
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

    /** Returns why the memory behind the list can no longer be moved, or null. */
    String deadMemory()
    {
        for (UcxRegistration registration : registrations) {
            if (!registration.live) {
                return "allocation " + registration.allocation + " was deregistered";
            }
        }
        for (UcxRemoteRegion region : regions) {
            if (!region.live) {
                return String.format(java.util.Locale.ROOT, "peer '%s' no longer advertises its region at address=0x%x length=%d",
                        peer.name, region.address(), region.length());
            }
        }
        return null;
    }
}
