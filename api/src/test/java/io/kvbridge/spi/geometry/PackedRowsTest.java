package io.kvbridge.spi.geometry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import org.junit.jupiter.api.Test;

final class PackedRowsTest
{
    private static final List<PackedMember> ROW = List.of(new PackedMember("L0", 0, 128), new PackedMember("L1", 128, 128));

    /** One packed MLA row of two layers (or one plain region of layer L0), 4 blocks, in a geometry of the given block sizes. */
    private static CacheGeometry geometry(int blockTokens, int kernelBlocksPerLogical, long stride, List<PackedMember> members)
    {
        long rowBytes = members.isEmpty() ? 128 : members.stream().mapToLong(member -> member.offset() + member.pageBytes()).max().orElseThrow();
        List<String> names = members.isEmpty() ? List.of("L0") : members.stream().map(PackedMember::layer).toList();
        Region region = new Region(names.getFirst(), 0x10000, rowBytes, stride, 4, 0, MemoryKind.DEVICE, 0, SplitClass.REPLICATE, names, members);
        ModelIdentity model = new ModelIdentity("m", "bfloat16", "bfloat16", 1, 576, 2, false);
        return new CacheGeometry("mla", Rank.single(), model, blockTokens, kernelBlocksPerLogical, List.of(new CacheGroup(0, GroupKind.MLA, 0, 1, 576)),
                List.of(new Allocation(0x10000, stride * 4, MemoryKind.DEVICE, 0)), List.of(region));
    }

    private static Region row(CacheGeometry geometry)
    {
        return geometry.regions().getFirst();
    }

    @Test
    void anIdenticalRowMovesWhole()
    {
        CacheGeometry local = geometry(16, 1, 256, ROW);
        CacheGeometry remote = geometry(16, 1, 256, ROW);
        assertTrue(PackedRows.movesWhole(local, row(local), remote, row(remote)));
        assertEquals(java.util.Optional.empty(), PackedRows.wholeRowMismatch(local, row(local), remote, row(remote)));
    }

    @Test
    void plainRegionsAreNotThisRulesBusiness()
    {
        CacheGeometry local = geometry(16, 1, 128, List.of());
        CacheGeometry remote = geometry(32, 2, 256, List.of());
        assertTrue(PackedRows.movesWhole(local, row(local), remote, row(remote)), "sub-blocks and strides of plain regions are the planner's other rules");
    }

    @Test
    void aRowOfOtherPagesStrideOrBlockSizesMovesLayerByLayer()
    {
        CacheGeometry local = geometry(16, 1, 256, ROW);
        mismatch(local, geometry(16, 1, 384, ROW), "stride=256", "stride=384");
        mismatch(local, geometry(16, 1, 384, List.of(new PackedMember("L0", 0, 128), new PackedMember("L1", 256, 128))), "offset=256");
        mismatch(local, geometry(16, 1, 256, List.of(new PackedMember("L1", 0, 128), new PackedMember("L0", 128, 128))), "L1", "L0");
        mismatch(local, geometry(32, 1, 256, ROW), "blockTokens=16", "blockTokens=32");
        mismatch(local, geometry(16, 2, 256, ROW), "kernelBlocksPerLogical=1", "kernelBlocksPerLogical=2");
    }

    @Test
    void aPackedRowMeetingAPlainRegionMovesLayerByLayerFromEitherSide()
    {
        CacheGeometry packed = geometry(16, 1, 256, ROW);
        CacheGeometry plain = geometry(16, 1, 256, List.of());
        assertFalse(PackedRows.movesWhole(packed, row(packed), plain, row(plain)));
        assertFalse(PackedRows.movesWhole(plain, row(plain), packed, row(packed)));
    }

    @Test
    void nullsAreRefused()
    {
        CacheGeometry g = geometry(16, 1, 256, ROW);
        assertThrows(NullPointerException.class, () -> PackedRows.wholeRowMismatch(null, row(g), g, row(g)));
        assertThrows(NullPointerException.class, () -> PackedRows.wholeRowMismatch(g, row(g), g, null));
    }

    private static void mismatch(CacheGeometry local, CacheGeometry remote, String... named)
    {
        String reason = PackedRows.wholeRowMismatch(local, row(local), remote, row(remote)).orElseThrow();
        for (String value : named) {
            assertTrue(reason.contains(value), reason);
        }
        assertFalse(PackedRows.movesWhole(local, row(local), remote, row(remote)));
        assertTrue(PackedRows.wholeRowMismatch(remote, row(remote), local, row(local)).isPresent(), "symmetric");
    }
}
