package io.kvbridge.layout.mla;

import io.kvbridge.spi.geometry.Rank;
import java.util.List;
import java.util.Map;

/** The mla layout with {@code packing=per-layer} keeps the whole layout contract. */
final class MlaPerLayerConformanceTest extends MlaCases
{
    @Override
    protected Map<String, String> config()
    {
        return Map.of(MlaCacheLayoutFactory.PACKING, "per-layer");
    }

    @Override
    protected List<LayoutCase> cases()
    {
        return List.of(
                perLayer("three layers, one allocation each", MlaModels.spec(3, List.of(3)), Rank.single(), 6),
                packedViews("interleaved views kept as one region per layer", MlaModels.spec(4, List.of(4)), Rank.single(), 3),
                aliasing(),
                paddedRows(),
                layerOuter());
    }
}
