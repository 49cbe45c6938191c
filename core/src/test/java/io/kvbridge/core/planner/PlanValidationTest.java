package io.kvbridge.core.planner;

import static io.kvbridge.core.planner.Errors.assertError;
import static io.kvbridge.core.planner.Geometries.geometry;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import org.junit.jupiter.api.Test;

final class PlanValidationTest
{
    @Test
    void moreLocalRanksThanHeadsKeepTheRemoteBlockSize()
    {
        // 8 KV heads: a consumer TP 16 rank holds one head, as does a producer TP 8 rank
        CacheGeometry consumer = geometry(8, 5, 16).region(0x100000, 4096, 4096, 8, -1, SplitClass.SPLIT).build();
        CacheGeometry producer = geometry(8, 2, 8).region(0x500000, 4096, 4096, 8, -1, SplitClass.SPLIT).build();
        TransferPlan plan = TransferPlan.pair(consumer, producer);
        assertEquals(List.of(2), plan.tpPlan().sources());
        assertEquals(0x500000, plan.remoteDescriptors(producer).address(0));
        assertEquals(4096, plan.remoteDescriptors(producer).length(0));
    }

    @Test
    void headShardedBlockBytesMustScaleWithTheHeadsEachRankHolds()
    {
        // 32 KV heads: consumer TP 4 holds 8 per rank, producer TP 2 holds 16, so its blocks are twice as large
        CacheGeometry consumer = geometry(32, 0, 4).region(0x100000, 8192, 8192, 8, -1, SplitClass.SPLIT).build();
        CacheGeometry sameSize = geometry(32, 0, 2).region(0x500000, 8192, 8192, 8, -1, SplitClass.SPLIT).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(consumer, sameSize),
                "blockBytes=8192", "needs 16384", "remoteHeads=16", "localHeads=8", "local tpSize=4", "remote tpSize=2");
        CacheGeometry doubled = geometry(32, 0, 2).region(0x500000, 16384, 16384, 8, -1, SplitClass.SPLIT).build();
        assertEquals(List.of(0), TransferPlan.pair(consumer, doubled).tpPlan().sources());
    }

    @Test
    void replicatedRegionsKeepTheirSizeWhileShardedOnesScale()
    {
        long fullAttention = 4096;
        long latent = 1152;
        CacheGeometry consumer = mixed(1, 2, fullAttention, latent, 0x100000);
        TransferPlan accepted = TransferPlan.pair(consumer, mixed(0, 1, 2 * fullAttention, latent, 0x500000));
        assertEquals(1, accepted.tpPlan().rankOffsetFactor());
        assertEquals(0x500000 + fullAttention, accepted.remoteDescriptors(mixed(0, 1, 2 * fullAttention, latent, 0x500000)).address(0));
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(consumer, mixed(0, 1, 2 * fullAttention, 2 * latent, 0x500000)),
                "remote region r1 has blockBytes=2304", "needs 1152", "replicated");
    }

    private static CacheGeometry mixed(int tpRank, int tpSize, long attentionBytes, long latentBytes, long base)
    {
        return geometry(8, tpRank, tpSize).group(GroupKind.FULL_ATTENTION).group(GroupKind.MLA)
                .region(base, attentionBytes, attentionBytes, 4, 0, SplitClass.SPLIT)
                .region(base + 0x100000, latentBytes, latentBytes, 4, 1, SplitClass.REPLICATE)
                .build();
    }

    @Test
    void interleavedHeadsCannotBeSlicedAcrossTpSizes()
    {
        CacheGeometry consumer = geometry(8, 0, 2).region(0x100000, 4096, 4096, 4, -1, SplitClass.INTERLEAVED).build();
        CacheGeometry producer = geometry(8, 0, 1).region(0x500000, 8192, 8192, 4, -1, SplitClass.INTERLEAVED).build();
        assertError(ErrorCode.TP_UNSUPPORTED, () -> TransferPlan.pair(consumer, producer),
                "interleaves heads", "tokens outermost", "local tpSize=2", "remote tpSize=1");
        CacheGeometry sameTp = geometry(8, 0, 2).region(0x500000, 4096, 4096, 4, -1, SplitClass.INTERLEAVED).build();
        assertEquals(1, TransferPlan.pair(consumer, sameTp).sourceCount());
    }

    @Test
    void splitClassesAndGroupRoutingMustMatch()
    {
        CacheGeometry split = geometry(8, 0, 1).region(0x100000, 4096, 4096, 4, -1, SplitClass.SPLIT).build();
        CacheGeometry interleaved = geometry(8, 0, 1).region(0x500000, 4096, 4096, 4, -1, SplitClass.INTERLEAVED).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(split, interleaved), "SPLIT locally", "INTERLEAVED");
        CacheGeometry grouped = geometry(8, 0, 1).region(0x500000, 4096, 4096, 4, 0, SplitClass.SPLIT).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(split, grouped), "group -1 locally", "group 0");
    }

    @Test
    void blockSizesMustDivideOneAnother()
    {
        CacheGeometry local = geometry(8, 0, 1).blockTokens(16).region(0x100000, 4096, 4096, 4, -1, SplitClass.SPLIT).build();
        CacheGeometry larger = geometry(8, 0, 1).blockTokens(32).region(0x500000, 8192, 8192, 4, -1, SplitClass.SPLIT).build();
        TransferPlan inverse = TransferPlan.pair(local, larger);
        assertEquals(1, inverse.blockSizeRatio());
        assertEquals(2, inverse.remoteBlockSizeRatio());
        CacheGeometry larger48 = geometry(8, 0, 1).blockTokens(48).region(0x500000, 12288, 12288, 4, -1, SplitClass.SPLIT).build();
        CacheGeometry local32 = geometry(8, 0, 1).blockTokens(32).region(0x100000, 8192, 8192, 4, -1, SplitClass.SPLIT).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(local32, larger48), "scheduler blocks of 32 tokens", "ones of 48 tokens",
                "do not divide one another");
        CacheGeometry local48 = geometry(8, 0, 1).blockTokens(48).region(0x100000, 12288, 12288, 4, -1, SplitClass.SPLIT).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(local48, larger), "local scheduler blocks of 48 tokens", "ones of 32 tokens");
        CacheGeometry wrongSubBlock = geometry(8, 0, 1).blockTokens(16).region(0x500000, 8192, 8192, 8, -1, SplitClass.SPLIT).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(local32, wrongSubBlock), "needs 4096", "blockSizeRatio=2");
    }

    @Test
    void headSlicesFromSeveralRanksWithUnequalBlocksMoveHeadByHead()
    {
        // 8 heads of 32 tokens x 32 bytes locally; each of 2 remote ranks holds 4 heads of 16 tokens
        CacheGeometry local = geometry(8, 0, 1).blockTokens(32).region(0x100000, 8192, 8192, 4, -1, SplitClass.SPLIT).build();
        CacheGeometry remote = geometry(8, 0, 2).blockTokens(16).region(0x500000, 2048, 2048, 8, -1, SplitClass.SPLIT).build();
        TransferPlan plan = TransferPlan.pair(local, remote);
        assertEquals(2, plan.sourceCount());
        DescriptorList slot1 = plan.localDescriptors(1);
        // slot 1 owns heads 4..7: sub-block 0 of head 4 at 4 x 1024, then sub-block 0 of head 5, ...
        assertEquals(0x100000 + 4 * 1024, slot1.address(0));
        assertEquals(0x100000 + 5 * 1024, slot1.address(1));
        assertEquals(0x100000 + 4 * 1024 + 512, slot1.address(4));
        assertEquals(512, slot1.length(0));
    }

    @Test
    void regionCountsModelsAndGroupsMustAgree()
    {
        CacheGeometry two = geometry(8, 0, 1).uniformRegions(2, 0x100000, 4096, 4, -1, SplitClass.SPLIT).build();
        CacheGeometry three = geometry(8, 0, 1).uniformRegions(3, 0x500000, 4096, 4, -1, SplitClass.SPLIT).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(two, three), "local has 2 regions but remote has 3");
        CacheGeometry fp8 = geometry(8, 0, 1).cacheDtype("fp8_e4m3").uniformRegions(2, 0x500000, 4096, 4, -1, SplitClass.SPLIT).build();
        assertError(ErrorCode.COMPATIBILITY_MISMATCH, () -> TransferPlan.pair(two, fp8), "fp8_e4m3", "bfloat16");
        CacheGeometry sliding = geometry(8, 0, 1).group(GroupKind.SLIDING_WINDOW).uniformRegions(2, 0x500000, 4096, 4, -1, SplitClass.SPLIT).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(two, sliding), "cache group 0", "SLIDING_WINDOW");
    }

    @Test
    void packedRegionsNeedIdenticalGeometry()
    {
        List<PackedMember> members = List.of(new PackedMember("layers.0", 0, 1024), new PackedMember("layers.1", 1024, 1024));
        CacheGeometry local = geometry(1, 0, 1).group(GroupKind.MLA).packedRegion(0x100000, 2048, 4, members).build();
        CacheGeometry same = geometry(1, 0, 2).group(GroupKind.MLA).packedRegion(0x500000, 2048, 8, members).build();
        assertEquals(4 + 0, TransferPlan.pair(local, same).descriptorCount(true));
        List<PackedMember> padded = List.of(new PackedMember("layers.0", 0, 1024), new PackedMember("layers.1", 1536, 1024));
        CacheGeometry other = geometry(1, 0, 1).group(GroupKind.MLA).packedRegion(0x500000, 2560, 4, padded).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(local, other), "identical block geometry", "blockBytes=2048", "blockBytes=2560");
    }

    @Test
    void mixedMemoryIsRejectedUntilSupported()
    {
        CacheGeometry mixed = geometry(8, 0, 1)
                .region(0x100000, 4096, 4096, 4, -1, SplitClass.SPLIT, MemoryKind.DEVICE, 0)
                .region(0x900000, 4096, 4096, 4, -1, SplitClass.SPLIT, MemoryKind.HOST, 0)
                .build();
        assertError(ErrorCode.UNSUPPORTED, () -> TransferPlan.pair(mixed, mixed), "different memory", "HOST");
    }
}
