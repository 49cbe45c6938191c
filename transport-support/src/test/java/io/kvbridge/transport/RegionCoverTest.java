package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Descriptors map to the distinct regions they lie in, in order of first use; one outside every region is refused. */
@Timeout(30)
final class RegionCoverTest
{
    private record Range(long start, long length)
    {
        boolean holds(long address, long bytes)
        {
            return address >= start && address + bytes <= start + length;
        }
    }

    private static final List<Range> RANGES = List.of(new Range(0, 100), new Range(100, 100), new Range(1000, 10));

    private static final RegionCover.Regions<Range> REGIONS = new RegionCover.Regions<>()
    {
        @Override
        public Range find(long address, long length)
        {
            return RANGES.stream().filter(range -> range.holds(address, length)).findFirst().orElse(null);
        }

        @Override
        public boolean contains(Range region, long address, long length)
        {
            return region.holds(address, length);
        }
    };

    @Test
    void idsIndexTheDistinctRegionsInOrderOfFirstUse()
    {
        RegionCover<Range> cover = RegionCover.of(new long[] {1000, 0, 50, 150, 1005}, new long[] {5, 50, 50, 10, 5}, REGIONS,
                (i, address, length) -> new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, "descriptor " + i));
        assertArrayEquals(new int[] {0, 1, 1, 2, 0}, cover.regionIds());
        assertEquals(List.of(RANGES.get(2), RANGES.get(0), RANGES.get(1)), cover.regions());
    }

    @Test
    void aDescriptorOutsideEveryRegionIsRefused()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> RegionCover.of(new long[] {0, 90}, new long[] {10, 20}, REGIONS,
                (i, address, length) -> new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, "descriptor " + i)));
        assertEquals(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, e.code());
        assertTrue(e.getMessage().endsWith("descriptor 1"), e.getMessage());
    }
}
