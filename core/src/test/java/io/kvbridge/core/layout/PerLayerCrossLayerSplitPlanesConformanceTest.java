package io.kvbridge.core.layout;

import io.kvbridge.core.layout.PerLayerPlacement.KvPlanes;
import io.kvbridge.core.layout.PerLayerPlacement.Layers;

/** The per-layer layout with cross-layer rows kept as K/V planes ([2, blocks, layers, ...]) keeps the whole layout contract. */
final class PerLayerCrossLayerSplitPlanesConformanceTest extends PlacementCases
{
    @Override
    KvPlanes planes()
    {
        return KvPlanes.SPLIT;
    }

    @Override
    Layers layers()
    {
        return Layers.CROSS_LAYER;
    }
}
