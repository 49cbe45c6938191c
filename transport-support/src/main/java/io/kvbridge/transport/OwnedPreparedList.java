package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;

/**
 * A prepared descriptor list as every transport keeps it: the owner token of the instance that
 * prepared it, the peer whose memory it describes (null for a local list), the checked descriptors
 * in primitive arrays, and for each descriptor the region it lies in, so runs never coalesce across
 * two regions. A local list's regions are its {@link Registration}s, whose liveness decides whether
 * the list is usable; a remote list's regions are the transport's (such as a peer's remote keys).
 *
 * <p>Threads: any; everything is final and the arrays are never written after construction,
 * except the released flag, which is volatile.
 */
public abstract class OwnedPreparedList implements PreparedList
{
    private final InstanceGuard owner;
    private final TransportPeer peer;
    private final MemoryKind kind;
    private final int device;
    private final long[] addresses;
    private final long[] lengths;
    private final int[] regionIds;
    private final Registration[] registrations;
    private volatile boolean released;

    /**
     * Creates a list; the arrays are kept, not copied.
     *
     * @param owner the preparing instance's guard.
     * @param peer the peer for a remote list, null for a local one.
     * @param kind memory kind of every descriptor.
     * @param device device index of every descriptor.
     * @param addresses descriptor addresses.
     * @param lengths descriptor lengths.
     * @param regionIds per descriptor, the id of the region it lies in.
     * @param registrations local registrations the list lies in; empty for a remote list.
     */
    protected OwnedPreparedList(InstanceGuard owner, TransportPeer peer, MemoryKind kind, int device, long[] addresses, long[] lengths,
            int[] regionIds, Registration[] registrations)
    {
        this.owner = requireNonNull(owner, "owner is null");
        this.peer = peer;
        this.kind = requireNonNull(kind, "kind is null");
        this.device = device;
        this.addresses = requireNonNull(addresses, "addresses is null");
        this.lengths = requireNonNull(lengths, "lengths is null");
        this.regionIds = requireNonNull(regionIds, "regionIds is null");
        this.registrations = requireNonNull(registrations, "registrations is null");
    }

    /** {@return the guard of the instance that prepared the list} */
    public final InstanceGuard owner()
    {
        return owner;
    }

    @Override
    public final int size()
    {
        return addresses.length;
    }

    @Override
    public final MemoryKind kind()
    {
        return kind;
    }

    /** {@return the device index of every descriptor} */
    public final int device()
    {
        return device;
    }

    @Override
    public final Peer peer()
    {
        return peer;
    }

    /** {@return the peer, typed, or null for a local list} */
    public final TransportPeer transportPeer()
    {
        return peer;
    }

    /**
     * {@return descriptor {@code i}'s address}
     *
     * @param i the descriptor's index.
     */
    public final long address(int i)
    {
        return addresses[i];
    }

    /**
     * {@return descriptor {@code i}'s length}
     *
     * @param i the descriptor's index.
     */
    public final long length(int i)
    {
        return lengths[i];
    }

    /**
     * {@return the region id descriptor {@code i} lies in}
     *
     * @param i the descriptor's index.
     */
    public final int regionId(int i)
    {
        return regionIds[i];
    }

    /** {@return the number of local registrations the list lies in} */
    public final int registrationCount()
    {
        return registrations.length;
    }

    /**
     * {@return local registration {@code i} the list lies in}
     *
     * @param i the registration's index.
     */
    public final Registration registration(int i)
    {
        return registrations[i];
    }

    /** {@return true once released by the caller, a disconnect or a close} */
    public final boolean released()
    {
        return released;
    }

    final void markReleased()
    {
        released = true;
    }

    /**
     * Tells why the list cannot be used in a transfer now: released, its peer unusable, or memory it
     * lies in deregistered. Allocates only once it has a reason.
     *
     * @return the reason, or null while usable.
     */
    public final String unusableReason()
    {
        if (released) {
            return "the prepared list was released; prepare it again";
        }
        if (peer != null) {
            String reason = peer.unusableReason();
            if (reason != null) {
                return "peer '" + peer.name() + "' cannot be used: " + reason + "; connect again and prepare a new list";
            }
        }
        String gone = deadMemoryReason();
        return gone == null ? null : gone + "; register it again and prepare a new list";
    }

    /**
     * Tells why the memory behind the list can no longer be moved, leaving out whether the list was
     * released and whether its peer is usable: what a transport checks when it starts a transfer
     * posted earlier, which still runs after its list is released.
     *
     * @return the reason, or null while every registration (and what the transport adds) is live.
     */
    public final String deadMemoryReason()
    {
        for (Registration registration : registrations) {
            if (!registration.live()) {
                return "allocation " + registration.allocation() + " was deregistered";
            }
        }
        return transportUnusableReason();
    }

    /**
     * What only the transport knows makes the list unusable, such as a released native handle.
     *
     * @return the reason, or null.
     */
    protected String transportUnusableReason()
    {
        return null;
    }
}
