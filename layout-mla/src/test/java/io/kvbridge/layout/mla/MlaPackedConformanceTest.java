package io.kvbridge.layout.mla;

import io.kvbridge.spi.geometry.Rank;
import java.util.List;
import java.util.Map;

/** The mla layout with {@code packing=packed} keeps the whole layout contract. */
final class MlaPackedConformanceTest extends MlaCases
{
    @Override
    protected Map<String, String> config()
    {
        return Map.of(MlaCacheLayoutFactory.PACKING, "packed");
    }

    @Override
    protected List<LayoutCase> cases()
    {
        return List.of(
                packed("four layers packed, two blocks", MlaModels.spec(4, List.of(4)), Rank.single(), 2),
                packed("PP2 stage 0 packs only its layers", MlaModels.spec(6, List.of(3, 3)), new Rank(0, 2, 0, 1), 4),
                packedViews("packed views of two groups", MlaModels.spec(4, List.of(4), 0, 1, 0, 1), Rank.single(), 3),
                twoViewsOfOneBacking(),
                paddedRows());
    }
}
