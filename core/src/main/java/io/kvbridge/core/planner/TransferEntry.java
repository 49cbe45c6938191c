package io.kvbridge.core.planner;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

import java.util.ArrayList;
import java.util.List;

/**
 * One pairing of a local region with a remote region. A plan moves blocks entry by entry, each side
 * with its own region's geometry; a local region may appear in several entries when several layers
 * share one pool and are routed separately.
 *
 * @param localRegion index into the local geometry's regions.
 * @param remoteRegion index into the remote geometry's regions.
 */
public record TransferEntry(int localRegion, int remoteRegion)
{
    /** Validates the indices. */
    public TransferEntry
    {
        checkArgument(localRegion >= 0, "localRegion=%d is negative", localRegion);
        checkArgument(remoteRegion >= 0, "remoteRegion=%d is negative", remoteRegion);
    }

    /**
     * Pairs regions by position, as peers that register the same model in the same order do.
     *
     * @param regionCount regions on each side.
     * @return entries {@code (r, r)} for {@code r < regionCount}.
     */
    public static List<TransferEntry> byIndex(int regionCount)
    {
        checkArgument(regionCount >= 0, "regionCount=%d is negative", regionCount);
        List<TransferEntry> entries = new ArrayList<>(regionCount);
        for (int r = 0; r < regionCount; r++) {
            entries.add(new TransferEntry(r, r));
        }
        return List.copyOf(entries);
    }
}
