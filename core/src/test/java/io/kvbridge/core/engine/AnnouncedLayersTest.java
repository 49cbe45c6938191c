package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.TestCache.layerName;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.geometry.Rank;
import java.lang.foreign.Arena;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a consumer rank takes from a producer rank's announcement of computed layers: all of it, or nothing. */
final class AnnouncedLayersTest
{
    @Test
    void unknownRepeatedOrLateLayersAreRefusedWholeAndChangeNothing()
    {
        try (Arena arena = Arena.ofConfined()) {
            AnnouncedLayers announced = new AnnouncedLayers(new StreamLayers(new TestCache(arena, TestCache.Shape.of(4, 16, false), Rank.single()).geometry));
            assertNull(announced.announce(List.of(layerName(0)), false));
            assertTrue(announced.announced(0));
            assertTrue(contains(announced.announce(List.of(layerName(1), "model.layers.9.self_attn"), false), "model.layers.9.self_attn"));
            assertFalse(announced.announced(1), "a refused announcement set a layer");
            assertTrue(contains(announced.announce(List.of(layerName(0)), false), layerName(0)), "announced twice");
            assertTrue(contains(announced.announce(List.of(layerName(2), layerName(2)), false), layerName(2)), "twice in one announcement");
            assertFalse(announced.announced(2));
            // all-done may overtake the last layers: it counts once they are in
            assertNull(announced.announce(List.of(layerName(1)), true));
            assertFalse(announced.allSaid(), "all-done with layers 2 and 3 missing");
            assertEquals("it said all layers were computed before", announced.announce(List.of(layerName(2)), true), "all-done twice");
            assertFalse(announced.announced(2));
            assertNull(announced.announce(List.of(layerName(2), layerName(3)), false));
            assertTrue(announced.allSaid() && announced.announced(3));
            assertEquals("it said all layers were computed before", announced.announce(List.of(), false), "anything after all layers are in");
        }
    }

    private static boolean contains(String problem, String named)
    {
        return problem != null && problem.contains(named);
    }
}
