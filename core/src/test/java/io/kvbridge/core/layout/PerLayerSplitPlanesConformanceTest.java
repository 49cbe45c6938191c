package io.kvbridge.core.layout;

import io.kvbridge.core.layout.PerLayerPlacement.KvPlanes;
import io.kvbridge.core.layout.PerLayerPlacement.Layers;

/** The per-layer layout with split K/V planes ([2, blocks, ...]) in allocations of their own keeps the whole layout contract. */
final class PerLayerSplitPlanesConformanceTest extends PlacementCases
{
    @Override
    KvPlanes planes()
    {
        return KvPlanes.SPLIT;
    }

    @Override
    Layers layers()
    {
        return Layers.PER_LAYER;
    }
}
