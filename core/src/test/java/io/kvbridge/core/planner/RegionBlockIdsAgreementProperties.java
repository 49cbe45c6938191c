package io.kvbridge.core.planner;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.RegionBlockIds;
import io.kvbridge.spi.geometry.SplitClass;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * The planner's allocation-free index computation routes block ids to regions exactly as the
 * reference statement of the rule, {@link RegionBlockIds#route}, does.
 */
final class RegionBlockIdsAgreementProperties
{
    @Property(tries = 500)
    void plannerIndicesAreTheRoutedIdsAtCumulativeCapacities(@ForAll @IntRange(min = 1, max = 3) int groups, @ForAll @IntRange(min = 1, max = 8) int regions,
            @ForAll long seed)
    {
        Random random = new Random(seed);
        Geometries builder = Geometries.geometry(8, 0, 1);
        for (int g = 0; g < groups; g++) {
            builder.group(g == 0 ? GroupKind.FULL_ATTENTION : GroupKind.SLIDING_WINDOW);
        }
        for (int r = 0; r < regions; r++) {
            builder.region(0x100000L * (r + 1), 256, 256, 1 + random.nextInt(12), random.nextInt(groups + 1) - 1, SplitClass.SPLIT);
        }
        CacheGeometry geometry = builder.build();
        int[][] ids = new int[groups][];
        int smallest = geometry.regions().stream().mapToInt(Region::capacity).min().orElseThrow();
        for (int g = 0; g < groups; g++) {
            int group = g;
            boolean served = geometry.regions().stream().anyMatch(region -> region.groupId() == group || region.groupId() == -1);
            // ids of a group no region holds would not move: the plan refuses them (UnservedGroupPlanTest)
            ids[g] = served ? random.ints(random.nextInt(6), 0, smallest).toArray() : new int[0];
        }

        int[][] routed = RegionBlockIds.route(geometry, ids);
        int total = 0;
        for (int[] region : routed) {
            total += region.length;
        }
        int[] expected = new int[total];
        int n = 0;
        int offset = 0;
        for (int r = 0; r < routed.length; r++) {
            for (int id : routed[r]) {
                expected[n++] = offset + id;
            }
            offset += geometry.regions().get(r).capacity();
        }
        TransferPlan plan = TransferPlan.pair(geometry, geometry);
        int[][] indices = PlanRequests.indices(plan, BlockSelection.of(ids), BlockSelection.of(ids));
        assertArrayEquals(expected, indices[0]);
        assertArrayEquals(expected, indices[1]);
    }
}
