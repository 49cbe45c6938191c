package io.kvbridge.core.planner;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.List;

/**
 * How one local rank maps onto the ranks of a peer engine whose tensor-parallel size may differ:
 * which remote ranks it talks to, which it reads heads from, and where its heads sit inside a
 * remote block.
 *
 * <p>Heads are numbered globally; a rank of an engine with {@code tp} ranks holds
 * {@code max(1, kvHeads / tp)} of them. When there are fewer heads than ranks, heads are
 * replicated and several remote ranks hold the same head: only the first of each is read (GQA
 * de-duplication).
 *
 * @param localRank the local tensor-parallel rank.
 * @param localTp the local tensor-parallel size.
 * @param remoteTp the remote tensor-parallel size.
 * @param kvHeads total KV heads of the head-sharded regions (1 when every region is replicated).
 * @param replicated whether every region is replicated across ranks (MLA): blocks are never sliced.
 * @param handshakeTargets remote ranks this rank exchanges metadata and notifications with.
 * @param sources remote ranks this rank reads attention heads from, in slot order.
 * @param rankOffsetFactor where this rank's heads start inside a remote block, in units of this
 *     rank's share of a block; 0 when it reads whole remote blocks.
 * @param localConsumers local ranks that address each remote rank, i.e. how many completions a
 *     remote rank waits for.
 */
public record TpPlan(
        int localRank,
        int localTp,
        int remoteTp,
        int kvHeads,
        boolean replicated,
        List<Integer> handshakeTargets,
        List<Integer> sources,
        int rankOffsetFactor,
        int localConsumers)
{
    /** Validates the values and copies the lists. */
    public TpPlan
    {
        handshakeTargets = List.copyOf(requireNonNull(handshakeTargets, "handshakeTargets is null"));
        sources = List.copyOf(requireNonNull(sources, "sources is null"));
        checkArgument(localTp > 0 && remoteTp > 0, "localTp=%d and remoteTp=%d must be positive", localTp, remoteTp);
        checkArgument(localRank >= 0 && localRank < localTp, "localRank=%d is outside [0, localTp=%d)", localRank, localTp);
        checkArgument(kvHeads > 0, "kvHeads=%d is not positive", kvHeads);
        checkArgument(!sources.isEmpty(), "a plan needs at least one source rank");
        for (int source : sources) {
            checkArgument(source >= 0 && source < remoteTp, "source rank=%d is outside [0, remoteTp=%d)", source, remoteTp);
        }
        checkArgument(rankOffsetFactor >= 0, "rankOffsetFactor=%d is negative", rankOffsetFactor);
        checkArgument(localConsumers > 0, "localConsumers=%d is not positive", localConsumers);
    }

    /**
     * Computes the plan of one local rank.
     *
     * @param localRank the local tensor-parallel rank.
     * @param localTp the local tensor-parallel size.
     * @param remoteTp the remote tensor-parallel size.
     * @param kvHeads total KV heads of the head-sharded regions; ignored (taken as 1) when replicated.
     * @param replicated whether every region is replicated across ranks (MLA).
     * @return the plan.
     * @throws KvBridgeException {@code TP_UNSUPPORTED} when one size is not a multiple of the other,
     *     or when the heads cannot be spread evenly over a side's ranks.
     */
    public static TpPlan compute(int localRank, int localTp, int remoteTp, int kvHeads, boolean replicated)
    {
        checkArgument(localTp > 0 && remoteTp > 0, "localTp=%d and remoteTp=%d must be positive", localTp, remoteTp);
        checkArgument(localRank >= 0 && localRank < localTp, "localRank=%d is outside [0, localTp=%d)", localRank, localTp);
        checkArgument(kvHeads > 0, "kvHeads=%d is not positive", kvHeads);
        int larger = Math.max(localTp, remoteTp);
        int smaller = Math.min(localTp, remoteTp);
        KvBridgeException.check(larger % smaller == 0, ErrorCode.TP_UNSUPPORTED,
                "local tpSize=%d and remote tpSize=%d do not divide one another (expected: one a multiple of the other, e.g. %d and %d)",
                localTp, remoteTp, smaller, smaller * Math.max(1, larger / smaller));
        int heads = replicated ? 1 : kvHeads;
        if (!replicated) {
            checkHeadsShard(heads, localTp, "local");
            checkHeadsShard(heads, remoteTp, "remote");
        }

        List<Integer> targets = new ArrayList<>();
        if (localTp >= remoteTp) {
            targets.add(localRank / (localTp / remoteTp));
        }
        else {
            int fanOut = remoteTp / localTp;
            for (int i = 0; i < fanOut; i++) {
                targets.add(localRank * fanOut + i);
            }
        }

        List<Integer> sources = new ArrayList<>();
        if (replicated || localTp >= remoteTp) {
            // with more remote ranks, replicated blocks are read from rank k * localRank so that
            // the local ranks spread their reads over the remote ones
            sources.add((int) ((long) localRank * remoteTp / localTp));
        }
        else {
            int previousHead = -1;
            for (int rank : targets) {
                int head = (int) ((long) rank * heads / remoteTp);
                if (head != previousHead) {
                    sources.add(rank);
                    previousHead = head;
                }
            }
        }

        int offsetFactor;
        if (replicated || localTp <= remoteTp) {
            offsetFactor = 0;
        }
        else if (localTp > heads) {
            offsetFactor = (int) ((long) localRank * heads / localTp - (long) sources.getFirst() * heads / remoteTp);
        }
        else {
            offsetFactor = localRank % (localTp / remoteTp);
        }
        int consumers = Math.max(1, localTp / remoteTp);
        return new TpPlan(localRank, localTp, remoteTp, heads, replicated, targets, sources, offsetFactor, consumers);
    }

    private static void checkHeadsShard(int heads, int tp, String side)
    {
        boolean even = heads >= tp ? heads % tp == 0 : tp % heads == 0;
        KvBridgeException.check(even, ErrorCode.TP_UNSUPPORTED,
                "%s tpSize=%d cannot shard kvHeads=%d evenly (expected: kvHeads a multiple of tpSize, or tpSize a multiple of kvHeads)",
                side, tp, heads);
    }

    /**
     * Returns the signed size ratio used by the reference connector.
     *
     * @return {@code localTp / remoteTp} when the local side is at least as large, else
     *     {@code -(remoteTp / localTp)}.
     */
    public int tpRatio()
    {
        return localTp >= remoteTp ? localTp / remoteTp : -(remoteTp / localTp);
    }

    /**
     * Returns the KV heads one local rank holds.
     *
     * @return {@code max(1, kvHeads / localTp)}.
     */
    public int localHeads()
    {
        return Math.max(1, kvHeads / localTp);
    }

    /**
     * Returns the KV heads one remote rank holds.
     *
     * @return {@code max(1, kvHeads / remoteTp)}.
     */
    public int remoteHeads()
    {
        return Math.max(1, kvHeads / remoteTp);
    }

    /**
     * Returns the slot of a source rank: the position of its heads inside the local block.
     *
     * @param remoteRank a remote tensor-parallel rank.
     * @return the slot in {@code [0, sources().size())}, or -1 when the rank is not a source.
     */
    public int slotOf(int remoteRank)
    {
        return sources.indexOf(remoteRank);
    }
}
