package io.kvbridge.core.sidechannel;

import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.TestingGeometries;
import io.kvbridge.spi.geometry.Rank;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Metadata of whole engines and settings with short timeouts, for side channel tests. */
final class SideChannelFixtures
{
    static final int LAYERS = 4;

    private SideChannelFixtures()
    {
    }

    /** One metadata per rank of an engine with the given sizes. */
    static List<RankMetadata> engine(String engineId, int ppSize, int tpSize)
    {
        List<RankMetadata> ranks = new ArrayList<>();
        for (int pp = 0; pp < ppSize; pp++) {
            for (int tp = 0; tp < tpSize; tp++) {
                ranks.add(TestingGeometries.metadata(engineId, TestingGeometries.perLayer(LAYERS, new Rank(pp, ppSize, tp, tpSize))));
            }
        }
        return ranks;
    }

    static SideChannelSettings.Builder fast()
    {
        return SideChannelSettings.builder()
                .connectTimeout(Duration.ofSeconds(2))
                .readTimeout(Duration.ofSeconds(2))
                .handshakeTimeout(Duration.ofSeconds(5))
                .idleConnectionTimeout(Duration.ofSeconds(5));
    }
}
