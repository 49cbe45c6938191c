package io.kvbridge.core.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.TransferMode;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.core.routing.Routing;
import io.kvbridge.core.routing.RoutingMode;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.DescriptorList;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Engines of the per-layer layout that keep K and V or their layers differently pair plane with
 * plane and layer with layer, each side with its own strides; joint K/V against planes is refused
 * when the plan is built, before anything is registered.
 */
final class PlacementPairingTest
{
    private static final int CAPACITY = 8;
    private final Arena arena = Arena.ofShared();
    private final ModelCacheSpec spec = PerLayerCases.spec(4, 1, List.of(4));

    @AfterEach
    void close()
    {
        arena.close();
    }

    private CacheGeometry describe(String planes, String placement)
    {
        boolean crossLayer = placement.equals("cross-layer");
        List<Allocation> allocations = new ArrayList<>();
        for (int a = 0; a < (crossLayer ? 1 : 4); a++) {
            allocations.add(Allocation.host(arena.allocate(CAPACITY * PerLayerCases.PAGE * (crossLayer ? 4 : 1), 4096)));
        }
        return new PerLayerCacheLayoutFactory().create(Map.of("kv-planes", planes, "placement", placement))
                .describe(spec, CacheMemory.of(allocations), new Rank(0, 1, 0, 2));
    }

    @Test
    void splitPlanesReadBlockwisePlanesKeyFromKeyAndValueFromValue()
    {
        CacheGeometry consumer = describe("split", "per-layer");
        CacheGeometry producer = describe("blockwise", "per-layer");
        TransferPlan plan = Routing.plan(spec.layers(), consumer, producer, TransferMode.PULL);
        assertEquals(8, plan.entries().size());
        for (var entry : plan.entries()) {
            assertEquals(entry.local().part(), entry.remote().part());
            assertEquals(entry.local().members(), entry.remote().members());
        }
        long half = PerLayerCases.PAGE / 2;
        DescriptorList local = plan.localDescriptors(0);
        DescriptorList remote = plan.remoteDescriptors(producer);
        // layer 0's value plane: the second half of the split allocation, the second half of each blockwise block
        int value = CAPACITY;
        assertEquals(consumer.regions().get(1).base(), local.address(value));
        assertEquals(consumer.regions().get(0).base() + CAPACITY * half, local.address(value));
        assertEquals(producer.regions().get(0).base() + half, remote.address(value));
        assertEquals(producer.regions().get(0).base() + half + PerLayerCases.PAGE, remote.address(value + 1));
        assertEquals(half, local.length(value));
        assertEquals(half, remote.length(value));
    }

    @Test
    void crossLayerRowsPairWithPerLayerAllocationsByPosition()
    {
        CacheGeometry consumer = describe("joint", "cross-layer");
        CacheGeometry producer = describe("joint", "per-layer");
        assertEquals(RoutingMode.BY_INDEX, Routing.route(spec.layers(), consumer, producer).mode());
        TransferPlan plan = Routing.plan(spec.layers(), consumer, producer, TransferMode.PULL);
        DescriptorList local = plan.localDescriptors(0);
        // block 1 of layer 2 sits in row 1 at the third page
        long row = 4 * PerLayerCases.PAGE;
        assertEquals(consumer.allocations().getFirst().address() + row + 2 * PerLayerCases.PAGE, local.address(2 * CAPACITY + 1));
        assertEquals(producer.regions().get(2).base() + PerLayerCases.PAGE, plan.remoteDescriptors(producer).address(2 * CAPACITY + 1));
    }

    @Test
    void jointKeysAndValuesAgainstPlanesAreRefusedNamingTheLayer()
    {
        CacheGeometry consumer = describe("joint", "per-layer");
        CacheGeometry producer = describe("split", "per-layer");
        KvBridgeException refused = assertThrows(KvBridgeException.class, () -> Routing.plan(spec.layers(), consumer, producer, TransferMode.PULL));
        assertEquals(ErrorCode.GEOMETRY_INCOMPATIBLE, refused.code());
        assertTrue(refused.getMessage().contains("layer model.layers.0.self_attn: local region model.layers.0.self_attn holds its JOINT"), refused.getMessage());
        assertTrue(refused.getMessage().contains("[" + KvPart.KEY + ", " + KvPart.VALUE + "]"), refused.getMessage());
        assertTrue(refused.getMessage().contains("kv-planes=joint on both engines"), refused.getMessage());
    }
}
