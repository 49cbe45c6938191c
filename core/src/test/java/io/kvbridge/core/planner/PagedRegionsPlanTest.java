package io.kvbridge.core.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.PeerGeometry;
import io.kvbridge.core.wire.TestingGeometries;
import io.kvbridge.spi.geometry.BlockRun;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.DescriptorList;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Regions made of runs (separately allocated pages): descriptors and registrations follow the runs. */
final class PagedRegionsPlanTest
{
    @Test
    void descriptorsAddressEveryBlockInItsPage()
    {
        CacheGeometry local = TestingGeometries.pagedPlanes();
        CacheGeometry remote = moved(local, 0x1000_0000L);
        TransferPlan plan = TransferPlan.pair(local, remote);

        assertEquals(blockAddresses(local), addresses(plan.localDescriptors(0)));
        assertEquals(blockAddresses(remote), addresses(plan.remoteDescriptors(remote)));
        assertInside(local, plan.localDescriptors(0));
        assertInside(remote, plan.remoteDescriptors(remote));
        assertEquals(Set.copyOf(local.allocations()), Set.copyOf(plan.allocations(true)), "every page is registered, not only the first run's");
        assertEquals(Set.copyOf(remote.allocations()), Set.copyOf(plan.allocations(false)));
    }

    @Test
    void aPeersDescriptorIndexResolvesInsideItsPage()
    {
        CacheGeometry geometry = TestingGeometries.pagedPlanes();
        PeerGeometry peer = PeerGeometry.of(geometry);
        for (int r = 0; r < peer.regionCount(); r++) {
            Region region = geometry.regions().get(r);
            for (int block = 0; block < region.capacity(); block++) {
                assertEquals(region.blockAddress(block), peer.descriptorAddress(peer.descriptorIndex(r, block)));
            }
        }
        // block 8 of the first plane opens the second page, which lies below the first in memory
        assertEquals(geometry.regions().getFirst().runs().get(1).base(), peer.descriptorAddress(8));
    }

    private static CacheGeometry moved(CacheGeometry geometry, long shift)
    {
        List<Region> regions = new ArrayList<>();
        for (Region r : geometry.regions()) {
            List<BlockRun> runs = r.runs().stream().map(run -> new BlockRun(run.base() + shift, run.blocks())).toList();
            regions.add(new Region(r.name(), r.base() + shift, r.blockBytes(), r.stride(), r.capacity(), r.groupId(), r.memoryKind(), r.device(), r.split(),
                    r.members(), r.packedMembers(), r.part(), runs));
        }
        List<Allocation> allocations = geometry.allocations().stream()
                .map(a -> new Allocation(a.address() + shift, a.bytes(), a.kind(), a.device())).toList();
        return new CacheGeometry(geometry.layoutName(), geometry.rank(), geometry.model(), geometry.blockTokens(), geometry.kernelBlocksPerLogical(),
                geometry.groups(), allocations, regions);
    }

    private static Set<Long> blockAddresses(CacheGeometry geometry)
    {
        Set<Long> addresses = new HashSet<>();
        for (Region region : geometry.regions()) {
            for (int block = 0; block < region.capacity(); block++) {
                addresses.add(region.blockAddress(block));
            }
        }
        return addresses;
    }

    private static Set<Long> addresses(DescriptorList list)
    {
        Set<Long> addresses = new HashSet<>();
        for (int i = 0; i < list.size(); i++) {
            addresses.add(list.address(i));
        }
        return addresses;
    }

    private static void assertInside(CacheGeometry geometry, DescriptorList list)
    {
        for (int i = 0; i < list.size(); i++) {
            long address = list.address(i);
            long length = list.length(i);
            assertTrue(geometry.allocations().stream().anyMatch(a -> a.contains(address, length)),
                    () -> "descriptor at 0x" + Long.toHexString(address) + " lies in no page");
        }
    }
}
