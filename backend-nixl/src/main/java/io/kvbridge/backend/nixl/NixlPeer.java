package io.kvbridge.backend.nixl;

import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.TransportPeer;

/**
 * A peer whose NIXL metadata the owning instance loaded, with the allocations it announced so the
 * initiator checks every remote descriptor before NIXL sees it.
 *
 * <p>Threads: {@code regions} is replaced on the owner thread when the peer's metadata is
 * refreshed and read there when lists are prepared; volatile so other threads see the latest.
 */
final class NixlPeer extends TransportPeer
{
    private volatile RegionTable regions;

    NixlPeer(InstanceGuard owner, String name, RegionTable regions)
    {
        super(owner, name);
        this.regions = regions;
    }

    RegionTable regions()
    {
        return regions;
    }

    void refresh(RegionTable regions)
    {
        this.regions = regions;
    }
}
