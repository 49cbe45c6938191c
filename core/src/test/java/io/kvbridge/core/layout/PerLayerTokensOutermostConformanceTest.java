package io.kvbridge.core.layout;

import java.util.Map;

/** The per-layer layout with tokens-outermost blocks keeps the whole layout contract. */
final class PerLayerTokensOutermostConformanceTest extends PerLayerCases
{
    @Override
    protected Map<String, String> config()
    {
        return Map.of(PerLayerCacheLayoutFactory.BLOCK_ORDER, "tokens-outermost");
    }
}
