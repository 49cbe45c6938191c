package io.kvbridge.core.planner;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.transfer.DescriptorList;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

final class TransferPlanProperties
{
    @Property(tries = 300)
    void everyDescriptorLiesInsideItsRegionBlockAndAllocation(
            @ForAll("heads") int kvHeads, @ForAll("tp") int localTp, @ForAll("tp") int remoteTp, @ForAll @IntRange(min = 1, max = 4) int ratio,
            @ForAll @IntRange(min = 1, max = 4) int regions, @ForAll @IntRange(min = 1, max = 2) int groups, @ForAll @LongRange long seed)
    {
        PlanScenario scenario = new PlanScenario(kvHeads, localTp, remoteTp, ratio, regions, groups, seed);
        TransferPlan plan = scenario.plan;
        for (int slot = 0; slot < plan.sourceCount(); slot++) {
            assertInside(scenario.local, plan, plan.localDescriptors(slot), true, scenario.ratio);
            assertInside(scenario.sources.get(slot), plan, plan.remoteDescriptors(scenario.sources.get(slot)), false, 1);
        }
    }

    private static void assertInside(CacheGeometry geometry, TransferPlan plan, DescriptorList list, boolean localSide, int ratio)
    {
        assertEquals(plan.descriptorCount(localSide), list.size());
        int n = 0;
        for (TransferEntry entry : plan.entries()) {
            Region region = geometry.regions().get(localSide ? entry.localRegion() : entry.remoteRegion());
            for (int i = 0; i < region.capacity() * ratio; i++, n++) {
                long address = list.address(n);
                long length = list.length(n);
                long block = (address - region.base()) / region.stride();
                assertTrue(address >= region.base() && block < region.capacity(), () -> "descriptor outside region " + region);
                assertTrue(address + length <= region.blockAddress((int) block) + region.blockBytes(), () -> "descriptor crosses its block in " + region);
                assertTrue(block == i / ratio, "descriptors follow block order");
                assertTrue(geometry.allocations().stream().anyMatch(a -> a.contains(address, length)), "descriptor inside an allocation");
            }
        }
        assertEquals(list.size(), n);
    }

    @Property(tries = 300)
    void pairsMatchOneToOneAndLandWhereTheModelPutsThem(
            @ForAll("heads") int kvHeads, @ForAll("tp") int localTp, @ForAll("tp") int remoteTp, @ForAll @IntRange(min = 1, max = 4) int ratio,
            @ForAll @IntRange(min = 1, max = 4) int regions, @ForAll @IntRange(min = 1, max = 2) int groups, @ForAll @LongRange long seed)
    {
        PlanScenario scenario = new PlanScenario(kvHeads, localTp, remoteTp, ratio, regions, groups, seed);
        TransferPlan plan = scenario.plan;
        BlockSelection[] blocks = scenario.selections();
        SimulatedMemory plain = memory(scenario, seed);
        SimulatedMemory coalesced = memory(scenario, seed);
        DescriptorPairs pairs = new DescriptorPairs(0);
        for (int slot = 0; slot < plan.sourceCount(); slot++) {
            DescriptorList localList = plan.localDescriptors(slot);
            DescriptorList remoteList = plan.remoteDescriptors(scenario.sources.get(slot));
            int count = plan.indexCount(slot, blocks[0]);
            int[] localIndices = new int[count];
            int[] remoteIndices = new int[count];
            assertEquals(count, plan.indices(slot, blocks[0], localIndices, blocks[1], remoteIndices));
            for (int i = 0; i < count; i++) {
                assertEquals(localList.length(localIndices[i]), remoteList.length(remoteIndices[i]), "paired descriptors have equal lengths");
            }
            assertEquals(count, pairs.resolve(localList, localIndices, remoteList, remoteIndices, count, false));
            long bytes = pairs.totalBytes();
            plain.copyAll(pairs, true);
            int merged = pairs.resolve(localList, localIndices, remoteList, remoteIndices, count, true);
            assertTrue(merged <= count);
            assertEquals(bytes, pairs.totalBytes());
            coalesced.copyAll(pairs, true);
        }
        byte[] expected = scenario.expectedConsumer().image(scenario.local);
        assertArrayEquals(expected, plain.image(scenario.local), scenario::toString);
        assertArrayEquals(expected, coalesced.image(scenario.local), scenario::toString);
    }

    private static SimulatedMemory memory(PlanScenario scenario, long seed)
    {
        SimulatedMemory memory = new SimulatedMemory();
        memory.add(scenario.local);
        for (CacheGeometry source : scenario.sources) {
            memory.add(source);
        }
        scenario.fillProducers(memory, new Random(seed));
        return memory;
    }

    @Provide
    Arbitrary<Integer> heads()
    {
        return Arbitraries.of(1, 2, 4, 8);
    }

    @Provide
    Arbitrary<Integer> tp()
    {
        return Arbitraries.of(1, 2, 4, 8);
    }

}
