package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.Peer;
import java.util.ArrayList;
import java.util.List;

/**
 * A connected peer: an endpoint to its worker and the ranges it advertised. Other threads read the
 * final fields, {@link #regions} and {@link #unusable}; the rest belongs to the owner thread.
 */
final class UcxPeer implements Peer
{
    final UcxTransferBackend owner;
    final long instanceId;
    final String name;
    // identifies the endpoint to UCX's error handler
    final long token;
    // sorted by address; replaced when the peer's metadata is refreshed
    volatile UcxRemoteRegion[] regions = new UcxRemoteRegion[0];
    // why the peer can no longer be used, or null
    volatile String unusable;

    // guarded by the owner's peer list
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

    UcxPeer(UcxTransferBackend owner, long instanceId, String name, long token)
    {
        this.owner = owner;
        this.instanceId = instanceId;
        this.name = name;
        this.token = token;
    }

    @Override
    public String name()
    {
        return name;
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

    @Override
    public String toString()
    {
        return "UcxPeer[" + name + (unusable == null ? "" : ", " + unusable) + "]";
    }
}
