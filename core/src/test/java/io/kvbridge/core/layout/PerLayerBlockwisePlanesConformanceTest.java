package io.kvbridge.core.layout;

import io.kvbridge.core.layout.PerLayerPlacement.KvPlanes;
import io.kvbridge.core.layout.PerLayerPlacement.Layers;

/** The per-layer layout with blocks that hold their keys then their values ([blocks, 2, ...]) keeps the whole layout contract. */
final class PerLayerBlockwisePlanesConformanceTest extends PlacementCases
{
    @Override
    KvPlanes planes()
    {
        return KvPlanes.BLOCKWISE;
    }

    @Override
    Layers layers()
    {
        return Layers.PER_LAYER;
    }
}
