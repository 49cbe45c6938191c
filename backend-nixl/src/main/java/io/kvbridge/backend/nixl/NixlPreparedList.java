package io.kvbridge.backend.nixl;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;

/**
 * A descriptor list NIXL prepared. The arrays stay on the Java side so indices and lengths are
 * checked before NIXL sees them; the native handle is released on the owner thread only.
 */
final class NixlPreparedList implements PreparedList
{
    final NixlTransferBackend owner;
    final NixlPeer peer;
    final MemoryKind kind;
    final int device;
    final long[] addresses;
    final long[] lengths;
    // the local registrations the descriptors lie in: all must be live when a transfer is made
    final NixlRegistration[] registrations;
    // the NIXL prepared-list handle; 0 once released (by the user, a deregistration or a disconnect)
    volatile long handle;
    volatile boolean released;

    NixlPreparedList(NixlTransferBackend owner, NixlPeer peer, MemoryKind kind, int device, long[] addresses, long[] lengths,
            NixlRegistration[] registrations, long handle)
    {
        this.owner = owner;
        this.peer = peer;
        this.kind = kind;
        this.device = device;
        this.addresses = addresses;
        this.lengths = lengths;
        this.registrations = registrations;
        this.handle = handle;
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

    /** Returns why the list cannot be used in a transfer now, or null. */
    KvBridgeException unusable()
    {
        if (released) {
            return new KvBridgeException(ErrorCode.NOT_REGISTERED, "cannot post: the prepared list was released");
        }
        if (peer != null && !peer.connected) {
            return new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot post: peer '" + peer.name() + "' was disconnected; connect again and prepare a new list");
        }
        for (NixlRegistration registration : registrations) {
            if (!registration.live) {
                return new KvBridgeException(ErrorCode.NOT_REGISTERED, "cannot post: allocation " + registration.allocation
                        + " was deregistered; register it again and prepare a new list");
            }
        }
        if (handle == 0) {
            return new KvBridgeException(ErrorCode.NOT_REGISTERED, "cannot post: the prepared list's NIXL handle was released");
        }
        return null;
    }
}
