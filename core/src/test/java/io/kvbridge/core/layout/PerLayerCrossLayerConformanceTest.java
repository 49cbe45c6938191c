package io.kvbridge.core.layout;

import io.kvbridge.core.layout.PerLayerPlacement.KvPlanes;
import io.kvbridge.core.layout.PerLayerPlacement.Layers;

/** The per-layer layout with cross-layer blocks (every block a row of all layers' pages) keeps the whole layout contract. */
final class PerLayerCrossLayerConformanceTest extends PlacementCases
{
    @Override
    KvPlanes planes()
    {
        return KvPlanes.JOINT;
    }

    @Override
    Layers layers()
    {
        return Layers.CROSS_LAYER;
    }
}
