package io.kvbridge.backend.ucx;

import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.RegionCover;
import io.kvbridge.transport.TransportPeer;
import java.util.ArrayList;
import java.util.List;

/**
 * A connected peer: an endpoint to its worker and the ranges it advertised.
 *
 * <p>Threads: other threads read the final fields, {@link #regions} and the unusable reason;
 * {@code listed} is guarded by {@link UcxEndpoints}' peer list; everything else belongs to the
 * owner thread.
 */
final class UcxPeer extends TransportPeer
{
    final long instanceId;
    // identifies the endpoint to UCX's error handler
    final long token;
    // sorted by address; replaced when the peer's metadata is refreshed
    volatile UcxRemoteRegion[] regions = new UcxRemoteRegion[0];

    // guarded by the peer list
    boolean listed = true;

    // owner thread only
    long endpoint;
    int inFlight;
    int pendingSends;
    boolean failed;
    final List<UcxRemoteRegion> retiredRegions = new ArrayList<>();
    boolean retiring;
    int retireStage;
    long retireDeadlineNanos;
    long closeRequest;

    UcxPeer(InstanceGuard owner, long instanceId, String name, long token)
    {
        super(owner, name);
        this.instanceId = instanceId;
        this.token = token;
    }

    /** @return a search of sorted advertised regions, for {@link RegionCover}. */
    static RegionCover.Regions<UcxRemoteRegion> regionsOf(UcxRemoteRegion[] sorted)
    {
        return new RegionCover.Regions<>()
        {
            @Override
            public UcxRemoteRegion find(long address, long length)
            {
                return regionOf(sorted, address, length);
            }

            @Override
            public boolean contains(UcxRemoteRegion region, long address, long length)
            {
                return region.advertised.contains(address, length);
            }
        };
    }

    /** Finds the advertised region holding a range, or null. */
    static UcxRemoteRegion regionOf(UcxRemoteRegion[] sorted, long address, long length)
    {
        int low = 0;
        int high = sorted.length - 1;
        while (low <= high) {
            int middle = (low + high) >>> 1;
            if (sorted[middle].address() <= address) {
                low = middle + 1;
            }
            else {
                high = middle - 1;
            }
        }
        return high >= 0 && sorted[high].advertised.contains(address, length) ? sorted[high] : null;
    }
}
