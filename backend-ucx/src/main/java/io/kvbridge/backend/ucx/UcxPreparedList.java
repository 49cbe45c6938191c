package io.kvbridge.backend.ucx;

import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnedPreparedList;
import io.kvbridge.transport.Registration;
import java.util.Locale;

/**
 * Descriptors checked once against registered memory (local) or the ranges a peer advertised
 * (remote). Each descriptor's region id names what moves it: for a local list an index into the
 * list's registrations (whose memory handle a copy uses), for a remote list an index into
 * {@link #regions}, the peer's remote regions the list lies in (whose remote key a copy uses).
 * Immutable apart from the released flag; any thread.
 */
final class UcxPreparedList extends OwnedPreparedList
{
    private static final Registration[] NO_REGISTRATIONS = new Registration[0];
    private static final UcxRemoteRegion[] NO_REGIONS = new UcxRemoteRegion[0];

    // the peer's regions the list lies in (remote), all of which must stay live
    private final UcxRemoteRegion[] regions;

    private UcxPreparedList(InstanceGuard owner, UcxPeer peer, MemoryKind kind, int device, long[] addresses, long[] lengths, int[] regionIds,
            Registration[] registrations, UcxRemoteRegion[] regions)
    {
        super(owner, peer, kind, device, addresses, lengths, regionIds, registrations);
        this.regions = regions;
    }

    static UcxPreparedList local(InstanceGuard owner, MemoryKind kind, int device, long[] addresses, long[] lengths, int[] registrationIds,
            Registration[] registrations)
    {
        return new UcxPreparedList(owner, null, kind, device, addresses, lengths, registrationIds, registrations, NO_REGIONS);
    }

    static UcxPreparedList remote(InstanceGuard owner, UcxPeer peer, long[] addresses, long[] lengths, int[] regionIds, UcxRemoteRegion[] regions)
    {
        return new UcxPreparedList(owner, peer, MemoryKind.HOST, 0, addresses, lengths, regionIds, NO_REGISTRATIONS, regions);
    }

    /** @return the memory handle of local region {@code id}. */
    long memoryHandle(int id)
    {
        return ((UcxRegistration) registration(id)).memh;
    }

    /** @return the remote key of remote region {@code id}. */
    long remoteKey(int id)
    {
        return regions[id].rkey;
    }

    @Override
    protected String transportUnusableReason()
    {
        for (UcxRemoteRegion region : regions) {
            if (!region.live) {
                return String.format(Locale.ROOT, "peer '%s' no longer advertises its region at address=0x%x length=%d",
                        transportPeer().name(), region.address(), region.length());
            }
        }
        return null;
    }
}
