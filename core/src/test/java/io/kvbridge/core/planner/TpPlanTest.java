package io.kvbridge.core.planner;

import static io.kvbridge.core.planner.Errors.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.ErrorCode;
import java.util.List;
import org.junit.jupiter.api.Test;

final class TpPlanTest
{
    @Test
    void homogeneousTpReadsTheSameRank()
    {
        TpPlan plan = TpPlan.compute(1, 2, 2, 8, false);
        assertEquals(List.of(1), plan.sources());
        assertEquals(List.of(1), plan.handshakeTargets());
        assertEquals(0, plan.rankOffsetFactor());
        assertEquals(1, plan.tpRatio());
        assertEquals(1, plan.localConsumers());
    }

    @Test
    void largerLocalTpReadsASliceOfOneRank()
    {
        TpPlan plan = TpPlan.compute(2, 4, 2, 8, false);
        assertEquals(List.of(1), plan.sources());
        assertEquals(List.of(1), plan.handshakeTargets());
        assertEquals(0, plan.rankOffsetFactor());
        assertEquals(2, plan.localConsumers());
        assertEquals(1, TpPlan.compute(3, 4, 2, 8, false).rankOffsetFactor());
        assertEquals(2, plan.tpRatio());
    }

    @Test
    void smallerLocalTpReadsEveryRankOfItsHeads()
    {
        TpPlan plan = TpPlan.compute(0, 1, 2, 8, false);
        assertEquals(List.of(0, 1), plan.sources());
        assertEquals(List.of(0, 1), plan.handshakeTargets());
        assertEquals(-2, plan.tpRatio());
        assertEquals(1, plan.slotOf(1));
        assertEquals(-1, plan.slotOf(5));
        assertEquals(1, plan.localConsumers());
    }

    @Test
    void handshakeTargetsCoverTheRemoteRanksOfThisRank()
    {
        assertEquals(List.of(4, 5, 6, 7), TpPlan.compute(1, 2, 8, 8, false).handshakeTargets());
        assertEquals(List.of(4, 5, 6, 7), TpPlan.compute(1, 2, 8, 8, false).sources());
    }

    @Test
    void gqaReadsOneRankPerDistinctHead()
    {
        // 2 KV heads over 8 producer ranks: ranks 0-3 hold head 0, ranks 4-7 head 1
        TpPlan plan = TpPlan.compute(0, 1, 8, 2, false);
        assertEquals(List.of(0, 4), plan.sources());
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7), plan.handshakeTargets());
        assertEquals(1, plan.slotOf(4));
        assertEquals(List.of(2), TpPlan.compute(1, 4, 8, 2, false).sources());
    }

    @Test
    void moreLocalRanksThanHeadsOffsetByHead()
    {
        // 8 heads, local TP 16 (one head per rank, replicated twice), remote TP 8 (one head each)
        for (int rank = 0; rank < 16; rank++) {
            TpPlan plan = TpPlan.compute(rank, 16, 8, 8, false);
            assertEquals(List.of(rank / 2), plan.sources());
            assertEquals(0, plan.rankOffsetFactor());
        }
        // 8 heads, local TP 16, remote TP 4 (two heads each): ranks 0-3 read heads 0,0,1,1 of rank 0
        int[] offsets = {0, 0, 1, 1};
        for (int rank = 0; rank < 4; rank++) {
            assertEquals(offsets[rank], TpPlan.compute(rank, 16, 4, 8, false).rankOffsetFactor());
        }
    }

    @Test
    void replicatedCachesNeverSlice()
    {
        TpPlan plan = TpPlan.compute(1, 2, 4, 1, true);
        assertEquals(List.of(2), plan.sources());
        assertEquals(List.of(2, 3), plan.handshakeTargets());
        assertEquals(0, plan.rankOffsetFactor());
        assertEquals(List.of(0), TpPlan.compute(1, 2, 1, 1, true).sources());
        assertEquals(0, TpPlan.compute(1, 2, 1, 1, true).rankOffsetFactor());
    }

    @Test
    void pushWritesEveryDecoderRankFromTheProducerRankItsPullWouldRead()
    {
        // local = producer. MLA TP 1 into TP 4: one rank writes all four copies
        TpPlan single = TpPlan.compute(0, 1, 4, 1, true);
        assertEquals(List.of(0, 1, 2, 3), single.writeTargets());
        assertEquals(0, single.writeSlot(3));
        assertEquals(1, single.writersPerRemoteRank());
        // TP 2 into TP 4: decoder rank d from producer rank d / 2
        assertEquals(List.of(0, 1), TpPlan.compute(0, 2, 4, 1, true).writeTargets());
        assertEquals(List.of(2, 3), TpPlan.compute(1, 2, 4, 1, true).writeTargets());
        // TP 4 into TP 1: the decoder reads one replica, so only rank 0 writes
        assertEquals(List.of(0), TpPlan.compute(0, 4, 1, 1, true).writeTargets());
        assertEquals(List.of(), TpPlan.compute(3, 4, 1, 1, true).writeTargets());
        assertEquals(1, TpPlan.compute(3, 4, 1, 1, true).writersPerRemoteRank());
        assertError(ErrorCode.INVALID_ARGUMENT, () -> TpPlan.compute(3, 4, 1, 1, true).writeSlot(0), "local rank=3 does not write remote rank=0");
        // 4 heads into 8 decoder ranks: heads are duplicated and each copy gets the slice of its head
        TpPlan heads = TpPlan.compute(0, 1, 8, 4, false);
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7), heads.writeTargets());
        assertEquals(List.of(0, 2, 4, 6), heads.sources());
        assertEquals(List.of(0, 0, 1, 1, 2, 2, 3, 3), heads.writeTargets().stream().map(heads::writeSlot).toList());
        // 2 heads over 4 producer ranks into 1: one writer per distinct head
        assertEquals(2, TpPlan.compute(0, 4, 1, 2, false).writersPerRemoteRank());
        assertEquals(List.of(), TpPlan.compute(1, 4, 1, 2, false).writeTargets());
    }

    @Test
    void pushLeavesNoDecoderRankUnwrittenAndWritesNoneTwice()
    {
        for (boolean replicated : new boolean[] {true, false}) {
            for (int heads : replicated ? new int[] {1} : new int[] {1, 2, 4, 8}) {
                for (int producerTp : new int[] {1, 2, 4, 8}) {
                    for (int consumerTp : new int[] {1, 2, 4, 8}) {
                        int[] writers = new int[consumerTp];
                        for (int p = 0; p < producerTp; p++) {
                            for (int d : TpPlan.compute(p, producerTp, consumerTp, heads, replicated).writeTargets()) {
                                writers[d]++;
                            }
                        }
                        String what = "replicated=" + replicated + " heads=" + heads + " tp " + producerTp + " -> " + consumerTp;
                        int expected = TpPlan.compute(0, producerTp, consumerTp, heads, replicated).writersPerRemoteRank();
                        for (int d = 0; d < consumerTp; d++) {
                            assertEquals(TpPlan.compute(d, consumerTp, producerTp, heads, replicated).sources().size(), writers[d], what + " rank " + d);
                            assertEquals(expected, writers[d], what + " rank " + d);
                        }
                    }
                }
            }
        }
    }

    @Test
    void inexpressibleSizesAreRejectedWithTheReason()
    {
        assertError(ErrorCode.TP_UNSUPPORTED, () -> TpPlan.compute(0, 3, 2, 12, false), "local tpSize=3", "remote tpSize=2", "do not divide", "e.g. 2 and 4");
        assertError(ErrorCode.TP_UNSUPPORTED, () -> TpPlan.compute(0, 4, 2, 6, false), "local tpSize=4", "kvHeads=6");
        assertError(ErrorCode.TP_UNSUPPORTED, () -> TpPlan.compute(0, 2, 8, 12, false), "remote tpSize=8", "kvHeads=12");
        assertError(ErrorCode.INVALID_ARGUMENT, () -> TpPlan.compute(2, 2, 2, 8, false), "localRank=2");
    }
}
