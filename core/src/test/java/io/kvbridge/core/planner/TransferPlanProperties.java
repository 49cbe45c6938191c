package io.kvbridge.core.planner;

import io.kvbridge.transport.DescriptorPairs;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.transfer.DescriptorList;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

final class TransferPlanProperties
{
    @Property(tries = 300)
    void everyDescriptorLiesInsideItsRegionBlockAndAllocation(@ForAll("scenarios") PlanScenario scenario)
    {
        TransferPlan plan = scenario.plan;
        for (int slot = 0; slot < plan.sourceCount(); slot++) {
            assertInside(scenario, scenario.local, plan, plan.localDescriptors(slot), true, scenario.ratio);
            assertInside(scenario, scenario.sources.get(slot), plan, plan.remoteDescriptors(scenario.sources.get(slot)), false, 1);
        }
    }

    private static void assertInside(PlanScenario scenario, CacheGeometry geometry, TransferPlan plan, DescriptorList list, boolean localSide, int ratio)
    {
        assertEquals(plan.descriptorCount(localSide), list.size());
        int n = 0;
        for (TransferEntry entry : plan.entries()) {
            Region region = geometry.regions().get(localSide ? entry.localRegion() : entry.remoteRegion());
            // unequal block sizes move a head-sharded block head by head
            int runs = region.split() == SplitClass.SPLIT && scenario.ratio > 1 ? Math.max(1, scenario.kvHeads / scenario.localTp) : 1;
            int perBlock = ratio * runs;
            for (int i = 0; i < region.capacity() * perBlock; i++, n++) {
                long address = list.address(n);
                long length = list.length(n);
                long block = (address - region.base()) / region.stride();
                assertTrue(address >= region.base() && block < region.capacity(), () -> "descriptor outside region " + region);
                assertTrue(address + length <= region.blockAddress((int) block) + region.blockBytes(), () -> "descriptor crosses its block in " + region);
                assertTrue(block == i / perBlock, "descriptors follow block order");
                assertTrue(geometry.allocations().stream().anyMatch(a -> a.contains(address, length)), "descriptor inside an allocation");
            }
        }
        assertEquals(list.size(), n);
    }

    @Property(tries = 300)
    void pairsMatchOneToOneAndLandWhereTheModelPutsThem(@ForAll("scenarios") PlanScenario scenario)
    {
        TransferPlan plan = scenario.plan;
        BlockSelection[] blocks = scenario.selections();
        SimulatedMemory plain = memory(scenario);
        SimulatedMemory coalesced = memory(scenario);
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

    private static SimulatedMemory memory(PlanScenario scenario)
    {
        SimulatedMemory memory = new SimulatedMemory();
        memory.add(scenario.local);
        for (CacheGeometry source : scenario.sources) {
            memory.add(source);
        }
        scenario.fillProducers(memory, new Random(scenario.seed));
        return memory;
    }

    /** Heads, TP sizes and block size ratios as models use them (powers of two), with random layouts and requests. */
    @Provide
    Arbitrary<PlanScenario> scenarios()
    {
        Arbitrary<Integer> powers = Arbitraries.of(1, 2, 4, 8);
        return Combinators.combine(powers, powers, powers, Arbitraries.integers().between(1, 4), Arbitraries.integers().between(1, 4),
                        Arbitraries.integers().between(1, 2), Arbitraries.longs())
                .as(PlanScenario::new);
    }
}
