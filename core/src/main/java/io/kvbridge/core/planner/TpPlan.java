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
 * <p>A plan reads from the remote side; in push the producer writes what the decoder's plan reads,
 * so its write targets are derived from the decoder ranks' plans ({@link #writeTargets()}), and
 * every decoder rank is written by exactly the ranks its own plan names as sources.
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
                localTp, remoteTp, smaller, smaller * ((larger + smaller - 1) / smaller));
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
     * Returns the plan a remote rank computes against this side: which ranks of this side it talks
     * to and reads from.
     *
     * @param remoteRank a remote tensor-parallel rank.
     * @return that rank's plan, with local and remote swapped.
     */
    public TpPlan peerPlan(int remoteRank)
    {
        checkArgument(remoteRank >= 0 && remoteRank < remoteTp, "remote rank=%d is outside [0, remoteTp=%d)", remoteRank, remoteTp);
        return compute(remoteRank, remoteTp, localTp, kvHeads, replicated);
    }

    /**
     * Returns the remote ranks this rank writes in push, where the local side is the producer: the
     * handshake targets whose own plan reads from this rank. A decoder with at least as many ranks
     * reads each rank's blocks from one producer rank, {@code d × producerTp / decoderTp} (the
     * rank a pull reads), so a producer rank writes every decoder rank it shakes hands with and
     * replicated (MLA) copies and duplicated heads reach each of them. A decoder with fewer ranks
     * reads a replicated block from the first producer rank of its group only, and heads from the
     * first rank holding each: the others write nothing and are released by the registration.
     *
     * @return the written remote ranks, ascending; empty when this rank writes none.
     */
    public List<Integer> writeTargets()
    {
        List<Integer> written = new ArrayList<>(handshakeTargets.size());
        for (int target : handshakeTargets) {
            if (peerPlan(target).sources().contains(localRank)) {
                written.add(target);
            }
        }
        return List.copyOf(written);
    }

    /**
     * Returns the slot whose descriptors carry what a written remote rank receives, where the
     * local side is the producer: the source holding the same heads (for replicated blocks, slot
     * 0 and the whole block).
     *
     * @param remoteRank one of {@link #writeTargets()}.
     * @return the slot in {@code [0, sources().size())}.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} when this rank does not write that rank.
     */
    public int writeSlot(int remoteRank)
    {
        checkArgument(writeTargets().contains(remoteRank), "local rank=%d does not write remote rank=%d (it writes %s)", localRank, remoteRank,
                writeTargets());
        long head = (long) remoteRank * kvHeads / remoteTp;
        for (int slot = 0; slot < sources.size(); slot++) {
            if ((long) sources.get(slot) * kvHeads / remoteTp == head) {
                return slot;
            }
        }
        throw new IllegalStateException("no source holds head " + head + " of remote rank " + remoteRank + ": " + this);
    }

    /**
     * Returns how many ranks of this side write each remote rank in push, where the local side is
     * the producer: the sources of the remote rank's own plan, which is how many write completions
     * each decoder rank waits for per producer stage.
     *
     * @return 1 when the remote side has at least as many ranks or blocks are replicated; else the
     *     distinct heads the remote rank reads from this side's ranks.
     */
    public int writersPerRemoteRank()
    {
        return peerPlan(handshakeTargets.getFirst()).sources().size();
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
