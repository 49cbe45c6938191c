package io.kvbridge.backend.tcp;

import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.RegionCover;
import io.kvbridge.transport.TransportPeer;
import java.util.List;

/**
 * A connected peer: its instance id, the extents it advertised, and this side's connection to it,
 * over which this side's transfers and notifications go. Unusable once the connection is closed or
 * the peer was disconnected.
 *
 * <p>Threads: any; the connection is set once before the peer is handed out, extents are replaced
 * whole on a refreshing {@code connect()}.
 */
final class TcpPeer extends TransportPeer
{
    final long instanceId;
    final String address;
    private volatile List<TcpMetadata.Region> regions;
    volatile InitiatorConnection connection;

    TcpPeer(InstanceGuard owner, TcpMetadata metadata)
    {
        super(owner, metadata.agentName());
        this.instanceId = metadata.instanceId();
        this.address = metadata.host() + ":" + metadata.port();
        this.regions = metadata.regions();
    }

    void refresh(List<TcpMetadata.Region> advertised)
    {
        regions = advertised;
    }

    List<TcpMetadata.Region> regions()
    {
        return regions;
    }

    static RegionCover.Regions<TcpMetadata.Region> regionsOf(List<TcpMetadata.Region> regions)
    {
        return new RegionCover.Regions<>()
        {
            @Override
            public TcpMetadata.Region find(long address, long length)
            {
                for (TcpMetadata.Region region : regions) {
                    if (contains(region, address, length)) {
                        return region;
                    }
                }
                return null;
            }

            @Override
            public boolean contains(TcpMetadata.Region region, long address, long length)
            {
                return address >= region.address() && length >= 0 && address - region.address() <= region.length() - length;
            }
        };
    }
}
