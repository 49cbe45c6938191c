package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.transport.Coverage;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnedPreparedList;
import io.kvbridge.transport.Registration;

/**
 * A prepared list: local lists lie in this instance's registrations; remote lists in a peer's
 * regions as opened here, whose address deltas the copies apply ({@link #region}).
 */
final class CudaIpcList extends OwnedPreparedList
{
    private static final Registration[] NONE = new Registration[0];
    private final CudaIpcPeer.RemoteRegion[] regions;

    private CudaIpcList(InstanceGuard owner, CudaIpcPeer peer, DescriptorList descriptors, int[] regionIds, Registration[] registrations,
            CudaIpcPeer.RemoteRegion[] regions)
    {
        super(owner, peer, descriptors.kind(), descriptors.device(), descriptors.addresses(), descriptors.lengths(), regionIds, registrations);
        this.regions = regions;
    }

    static CudaIpcList local(InstanceGuard owner, DescriptorList descriptors, Coverage coverage)
    {
        return new CudaIpcList(owner, null, descriptors, coverage.registrationIds(), coverage.registrations(), new CudaIpcPeer.RemoteRegion[0]);
    }

    static CudaIpcList remote(InstanceGuard owner, CudaIpcPeer peer, DescriptorList descriptors, int[] regionIds, CudaIpcPeer.RemoteRegion[] regions)
    {
        return new CudaIpcList(owner, peer, descriptors, regionIds, NONE, regions);
    }

    /** @return remote region {@code id} of the list. */
    CudaIpcPeer.RemoteRegion region(int id)
    {
        return regions[id];
    }

    @Override
    protected String transportUnusableReason()
    {
        CudaIpcPeer peer = (CudaIpcPeer) transportPeer();
        return peer != null && peer.mappingsClosed() ? "peer '" + peer.name() + "''s memory is no longer mapped here" : null;
    }
}
