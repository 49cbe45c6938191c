package io.kvbridge.core.planner;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.BlockRun;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.DescriptorList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * How one local rank moves blocks to or from one peer engine: the transfer entries (local region
 * paired with remote region), the tensor-parallel plan, the block size ratio, the descriptor lists
 * to prepare once, and the per-request descriptor indices into them. A plan is checked completely
 * when it is built, before any memory is registered with a transport; it is immutable and
 * thread-safe.
 *
 * <p><b>Descriptors.</b> With {@code ratio = local blockTokens / remote blockTokens}, entry
 * {@code e} of local region {@code L} has {@code L.capacity * ratio} local descriptors; sub-block
 * {@code s} covers {@code [L.base + (s / ratio) * L.stride + (s % ratio) * u, + u)} with
 * {@code u = L.blockBytes / ratio}. Its remote region {@code R} has {@code R.capacity} remote
 * descriptors {@code [R.base + offset + k * R.stride, + u / reads)}, where a head-sharded
 * ({@code SPLIT}) region reads this rank's head slice ({@code offset = rankOffsetFactor * u},
 * {@code reads} = number of source ranks) and a replicated one the whole block. When several
 * remote ranks each supply some heads, each source slot has its own local list whose descriptors
 * are that slot's slice of the local sub-block.
 *
 * <p><b>Entries.</b> Each entry carries the geometry each side uses for it (its region, or its view
 * of one layer under layer-name routing), so the formulas above apply per entry with
 * {@code L = entry.local()} and {@code R = entry.remote()}.
 *
 * <p><b>Indices.</b> Each side's list is entry-major; entry {@code e} starts at the cumulative
 * capacity of the entries before it and receives the block ids of the entry's cache group (all
 * groups concatenated when its group id is -1). Replicated entries are read from the first source
 * slot only.
 */
public final class TransferPlan
{
    private final CacheGeometry local;
    private final CacheGeometry remote;
    private final List<TransferEntry> entries;
    private final TpPlan tp;
    private final int ratio;
    private final int remoteRatio;
    private final boolean[] replicatedEntries;
    private final int[] runs;
    // sub-blocks per block on each side: the block size ratio, or 1 for a state (a state is never split)
    private final int[] splits;
    private final int[] remoteSplits;
    private final long[] localRunBytes;
    private final long[] remoteRunBytes;
    private final long[] remoteOffsets;
    private final long[] pairBytes;
    private final long[] sliceBytes;
    private final IndexSpace localSpace;
    private final IndexSpace remoteSpace;
    private final boolean[] laterSlots;
    private final GroupCoverage coverage;

    private TransferPlan(CacheGeometry local, CacheGeometry remote, List<TransferEntry> entries)
    {
        this.local = requireNonNull(local, "local is null");
        this.remote = requireNonNull(remote, "remote is null");
        this.entries = List.copyOf(requireNonNull(entries, "entries is null"));
        int tokens = PairingRules.checkPeers(local, remote);
        this.ratio = Math.max(1, tokens);
        this.remoteRatio = Math.max(1, -tokens);
        PairingRules.checkEntries(local, remote, this.entries);

        int count = this.entries.size();
        boolean allReplicated = true;
        // a plan of state components alone shards as if every rank held distinct heads
        int kvHeads = Math.max(local.rank().tpSize(), remote.rank().tpSize());
        for (int e = count - 1; e >= 0; e--) {
            TransferEntry entry = this.entries.get(e);
            Region mine = entry.local();
            if (!PairingRules.replicated(mine)) {
                allReplicated = false;
                if (!entry.stateComponent()) {
                    kvHeads = PairingRules.headsOf(local, mine);
                }
            }
        }
        this.tp = TpPlan.compute(local.rank().tpRank(), local.rank().tpSize(), remote.rank().tpSize(), kvHeads, allReplicated);

        int sources = tp.sources().size();
        this.replicatedEntries = new boolean[count];
        this.runs = new int[count];
        this.splits = new int[count];
        this.remoteSplits = new int[count];
        this.localRunBytes = new long[count];
        this.remoteRunBytes = new long[count];
        this.remoteOffsets = new long[count];
        this.sliceBytes = new long[count];
        this.pairBytes = new long[count];
        this.laterSlots = new boolean[count];
        String[] localNames = new String[count];
        String[] remoteNames = new String[count];
        int[] localCapacities = new int[count];
        int[] remoteCapacities = new int[count];
        int[] groupIds = new int[count];
        for (int e = 0; e < count; e++) {
            TransferEntry entry = this.entries.get(e);
            Region mine = entry.local();
            Region theirs = entry.remote();
            // head runs of a local block: 1, or its heads when blocks of unequal size move head by head
            int headRuns = PairingRules.checkEntry(local, remote, mine, theirs, tp, ratio, remoteRatio);
            boolean replicatedEntry = PairingRules.replicated(mine);
            boolean byHead = headRuns > 1;
            int split = entry.stateComponent() ? 1 : ratio;
            int remoteSplit = entry.stateComponent() ? 1 : remoteRatio;
            splits[e] = split;
            remoteSplits[e] = remoteSplit;
            // this rank's bytes of one remote block
            long share = mine.blockBytes() * remoteSplit / split;
            replicatedEntries[e] = replicatedEntry;
            // each source slot moves its own heads: runs per slot, and the local bytes of one run
            runs[e] = byHead ? headRuns / sources : 1;
            localRunBytes[e] = mine.blockBytes() / headRuns;
            remoteRunBytes[e] = byHead ? localRunBytes[e] * remoteSplit / split : share;
            remoteOffsets[e] = replicatedEntry ? 0 : tp.rankOffsetFactor() * share;
            pairBytes[e] = byHead ? localRunBytes[e] / split : mine.blockBytes() / split / (replicatedEntry ? 1 : sources);
            sliceBytes[e] = replicatedEntry ? 0 : byHead ? runs[e] * localRunBytes[e] : pairBytes[e];
            laterSlots[e] = !replicatedEntry;
            localNames[e] = mine.name();
            remoteNames[e] = theirs.name();
            localCapacities[e] = subBlocks(mine, split);
            remoteCapacities[e] = subBlocks(theirs, remoteSplit);
            groupIds[e] = entry.groupId();
        }
        this.localSpace = new IndexSpace("local", localNames, localCapacities, runs, groupIds, laterSlots);
        this.remoteSpace = new IndexSpace("remote", remoteNames, remoteCapacities, runs, groupIds, laterSlots);
        this.coverage = new GroupCoverage(local, remote, this.entries);
    }

    private static int subBlocks(Region region, int split)
    {
        long count = (long) region.capacity() * split;
        if (count > Integer.MAX_VALUE) {
            throw Checks.failure(ErrorCode.UNSUPPORTED, "region %s: capacity=%d x block split=%d sub-blocks exceed an int index", region.name(), region.capacity(), split);
        }
        return (int) count;
    }

    /**
     * Pairs two geometries region by region, in order (index routing): both sides describe the
     * same layers in the same order.
     *
     * @param local this rank's geometry.
     * @param remote the geometry of one rank of the peer engine (any source rank: they differ in
     *     addresses only).
     * @return the checked plan.
     * @throws KvBridgeException {@code GEOMETRY_INCOMPATIBLE}, {@code TP_UNSUPPORTED},
     *     {@code COMPATIBILITY_MISMATCH} or {@code UNSUPPORTED} naming the values on both sides.
     */
    public static TransferPlan pair(CacheGeometry local, CacheGeometry remote)
    {
        requireNonNull(local, "local is null");
        requireNonNull(remote, "remote is null");
        if (local.regions().size() != remote.regions().size()) {
            throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "local has %d regions but remote has %d (expected: the same regions on both sides when pairing by position; check that both engines run the same model and layout, with the same pipeline stage split)",
                    local.regions().size(), remote.regions().size());
        }
        return new TransferPlan(local, remote, TransferEntry.byIndex(local, remote));
    }

    /**
     * Pairs two geometries along explicit entries, such as the ones layer-name routing produces
     * ({@link io.kvbridge.core.routing.Routing}).
     *
     * @param local this rank's geometry.
     * @param remote the geometry of one rank of the peer engine.
     * @param entries the pairs to move, in the order both descriptor lists follow; each is checked
     *     against the geometries it names.
     * @return the checked plan.
     * @throws KvBridgeException {@code ROUTING_FAILED} for no entries or an entry that differs from
     *     what its regions give, and the errors of {@link #pair(CacheGeometry, CacheGeometry)}.
     */
    public static TransferPlan pair(CacheGeometry local, CacheGeometry remote, List<TransferEntry> entries)
    {
        return new TransferPlan(local, remote, entries);
    }

    /**
     * Returns the tensor-parallel plan.
     *
     * @return the plan of this rank against the peer's size.
     */
    public TpPlan tpPlan()
    {
        return tp;
    }

    /**
     * Returns the block size ratio.
     *
     * @return local kernel block tokens divided by remote kernel block tokens when the local block
     *     is the larger; 1 otherwise.
     */
    public int blockSizeRatio()
    {
        return ratio;
    }

    /**
     * Returns the inverse block size ratio.
     *
     * @return remote kernel block tokens divided by local kernel block tokens when the remote block
     *     is the larger; 1 otherwise.
     */
    public int remoteBlockSizeRatio()
    {
        return remoteRatio;
    }

    /**
     * Aligns one request's block ids for this plan's block sizes, the local side being the consumer
     * (as every plan of the engine is): the larger blocks are split into sub-blocks of the smaller
     * size, the producer's are trimmed to the tokens the consumer still needs, and both sides end
     * with the same count per group. See {@link BlockSelection#align}.
     *
     * @param consumer the local (consumer) selection, in kernel blocks.
     * @param producer the remote (producer) selection, in kernel blocks.
     */
    public void alignBlocks(BlockSelection consumer, BlockSelection producer)
    {
        BlockSelection.align(consumer, local.blockTokens() * local.kernelBlocksPerLogical(), local.blockTokens(), producer,
                remote.blockTokens() * remote.kernelBlocksPerLogical(), remote.blockTokens());
    }

    /**
     * Returns the transfer entries.
     *
     * @return the pairs, in descriptor order.
     */
    public List<TransferEntry> entries()
    {
        return entries;
    }

    /**
     * Returns the allocations the entries' regions lie in, each once however many entries share
     * it: what a transport registers for this plan.
     *
     * @param localSide true for the local geometry, false for the remote one the plan was built with.
     * @return distinct allocations in the order entries first use them.
     */
    public List<Allocation> allocations(boolean localSide)
    {
        CacheGeometry geometry = localSide ? local : remote;
        Set<Allocation> used = new LinkedHashSet<>();
        for (TransferEntry entry : entries) {
            Region region = PairingRules.side(entry, localSide);
            for (BlockRun run : region.spans()) {
                long end = run.end(region.stride(), region.blockBytes());
                for (Allocation allocation : geometry.allocations()) {
                    if (allocation.kind() == region.memoryKind() && allocation.device() == region.device()
                            && allocation.contains(run.base(), end - run.base())) {
                        used.add(allocation);
                        break;
                    }
                }
            }
        }
        return List.copyOf(used);
    }

    /**
     * Returns the number of source slots: remote ranks this rank reads from, each with its own
     * local list.
     *
     * @return {@code tpPlan().sources().size()}.
     */
    public int sourceCount()
    {
        return tp.sources().size();
    }

    /**
     * Returns the size of each side's descriptor list.
     *
     * @param localSide true for the local list, false for a remote one.
     * @return the number of descriptors.
     */
    public int descriptorCount(boolean localSide)
    {
        return localSide ? localSpace.size() : remoteSpace.size();
    }

    /**
     * Builds the local descriptor list of one source slot. Prepare it once and keep it: it depends
     * only on the plan.
     *
     * @param slot source slot in {@code [0, sourceCount())}; slot 0 when there is one source.
     * @return the list, in the order local indices address.
     */
    public DescriptorList localDescriptors(int slot)
    {
        checkSlot(slot);
        int size = localSpace.size();
        long[] addresses = new long[size];
        long[] lengths = new long[size];
        int n = 0;
        int sources = tp.sources().size();
        for (int e = 0; e < entries.size(); e++) {
            Region region = entries.get(e).local();
            long run = localRunBytes[e];
            int split = splits[e];
            long sub = run / split;
            long length = pairBytes[e];
            long slice = sources == 1 ? 0 : slot * sliceBytes[e];
            int entryRuns = runs[e];
            for (int block = 0; block < region.capacity(); block++) {
                long address = region.blockAddress(block) + slice;
                for (int s = 0; s < split; s++) {
                    for (int h = 0; h < entryRuns; h++) {
                        addresses[n] = address + h * run + s * sub;
                        lengths[n] = length;
                        n++;
                    }
                }
            }
        }
        Region first = entries.getFirst().local();
        return DescriptorList.wrap(first.memoryKind(), first.device(), addresses, lengths, n);
    }

    /**
     * Builds the remote descriptor list of one source rank. Prepare it once per remote rank and
     * keep it.
     *
     * @param remoteRank the geometry that rank advertised; it must have the shape of the geometry
     *     the plan was built with (addresses may differ).
     * @return the list, in the order remote indices address.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} when the rank is not a source of this plan,
     *     {@code GEOMETRY_INCOMPATIBLE} when its shape differs.
     */
    public DescriptorList remoteDescriptors(CacheGeometry remoteRank)
    {
        requireNonNull(remoteRank, "remoteRank is null");
        if (remoteRank.rank().tpSize() != tp.remoteTp() || tp.slotOf(remoteRank.rank().tpRank()) < 0) {
            throw Checks.invalid("remote rank %s is not a source of this plan (remote tpSize=%d, sources=%s)",
                    remoteRank.rank(), tp.remoteTp(), tp.sources());
        }
        Region[] views = viewsIn(remoteRank);
        int size = remoteSpace.size();
        long[] addresses = new long[size];
        long[] lengths = new long[size];
        int n = 0;
        for (int e = 0; e < entries.size(); e++) {
            Region region = views[e];
            long offset = remoteOffsets[e];
            long length = pairBytes[e];
            long run = remoteRunBytes[e];
            int remoteSplit = remoteSplits[e];
            long sub = run / remoteSplit;
            int entryRuns = runs[e];
            int capacity = region.capacity();
            for (int block = 0; block < capacity; block++) {
                long address = region.blockAddress(block) + offset;
                for (int s = 0; s < remoteSplit; s++) {
                    for (int h = 0; h < entryRuns; h++) {
                        addresses[n] = address + h * run + s * sub;
                        lengths[n] = length;
                        n++;
                    }
                }
            }
        }
        Region first = views[0];
        return DescriptorList.wrap(first.memoryKind(), first.device(), addresses, lengths, n);
    }

    /** Returns the geometry each entry uses on another rank of the peer engine, after checking that rank has the same shape. */
    private Region[] viewsIn(CacheGeometry remoteRank)
    {
        if (!(remoteRank.model().equals(remote.model()) && remoteRank.blockTokens() == remote.blockTokens()
                        && remoteRank.regions().size() == remote.regions().size())) {
            throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "remote rank %s advertises model=%s blockTokens=%d with %d regions, unlike rank %s of the same engine (model=%s blockTokens=%d, %d regions)",
                    remoteRank.rank(), remoteRank.model(), remoteRank.blockTokens(), remoteRank.regions().size(), remote.rank(), remote.model(), remote.blockTokens(), remote.regions().size());
        }
        Region[] views = new Region[entries.size()];
        for (int e = 0; e < views.length; e++) {
            TransferEntry entry = entries.get(e);
            Region theirs = entry.viewIn(remoteRank, false);
            Region expected = entry.remote();
            // a packed member must sit at the same place in the row on every rank
            long offset = theirs.base() - remoteRank.regions().get(entry.remoteRegion()).base();
            long expectedOffset = expected.base() - remote.regions().get(entry.remoteRegion()).base();
            if (!(theirs.blockBytes() == expected.blockBytes() && theirs.stride() == expected.stride() && theirs.capacity() == expected.capacity()
                            && theirs.split() == expected.split() && theirs.groupId() == expected.groupId() && offset == expectedOffset)) {
                throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "remote rank %s region %s (blockBytes=%d stride=%d capacity=%d split=%s group=%d offset=%d) differs from rank %s region %s (blockBytes=%d stride=%d capacity=%d split=%s group=%d offset=%d): ranks of one engine must share one shape",
                        remoteRank.rank(), theirs.name(), theirs.blockBytes(), theirs.stride(), theirs.capacity(), theirs.split(), theirs.groupId(), offset,
                        remote.rank(), expected.name(), expected.blockBytes(), expected.stride(), expected.capacity(), expected.split(), expected.groupId(), expectedOffset);
            }
            views[e] = theirs;
        }
        PairingRules.checkOneMemory(List.of(views), "remote rank " + remoteRank.rank());
        return views;
    }

    /**
     * Returns how many descriptor pairs a request moves through one source slot.
     *
     * @param slot source slot.
     * @param blocks either side's selection (both route groups alike).
     * @return the size the index arrays need.
     * @throws KvBridgeException {@code BLOCK_OUT_OF_RANGE} as {@link #indices} for a group the plan
     *     does not serve.
     */
    public int indexCount(int slot, BlockSelection blocks)
    {
        checkSlot(slot);
        checkGroups(requireNonNull(blocks, "blocks is null"), "blocks");
        if (slot == 0) {
            coverage.checkWholeExchange(blocks, "blocks");
        }
        return localSpace.count(blocks, slot == 0 ? null : laterSlots);
    }

    /**
     * Computes a request's descriptor indices for one source slot: pair {@code i} moves local
     * descriptor {@code localOut[i]} and remote descriptor {@code remoteOut[i]}. Allocates nothing.
     *
     * @param slot source slot in {@code [0, sourceCount())}.
     * @param localBlocks local block ids, in local kernel blocks split for the ratio.
     * @param localOut receives the local indices; at least {@link #indexCount} long.
     * @param remoteBlocks remote block ids, in remote kernel blocks, trimmed to the local need.
     * @param remoteOut receives the remote indices; at least {@link #indexCount} long.
     * @return the number of pairs written.
     * @throws KvBridgeException {@code LENGTH_MISMATCH} when a group has a different number of ids
     *     on the two sides, {@code BLOCK_OUT_OF_RANGE} when an id lies outside its region, or when
     *     slot 0 of a plan between two whole engines is given ids of a group no entry addresses
     *     (naming the group; a pipeline stage's plan skips them, see {@link #checkServed}).
     */
    public int indices(int slot, BlockSelection localBlocks, int[] localOut, BlockSelection remoteBlocks, int[] remoteOut)
    {
        checkSlot(slot);
        requireNonNull(localBlocks, "localBlocks is null");
        requireNonNull(remoteBlocks, "remoteBlocks is null");
        requireNonNull(localOut, "localOut is null");
        requireNonNull(remoteOut, "remoteOut is null");
        checkGroups(localBlocks, "localBlocks");
        checkGroups(remoteBlocks, "remoteBlocks");
        for (int g = 0; g < localBlocks.groups(); g++) {
            if (localBlocks.count(g) != remoteBlocks.count(g)) {
                throw Checks.failure(ErrorCode.LENGTH_MISMATCH, "group %d: %d local ids but %d remote ids (expected: equal after kernel expansion, ratio split and prefix trimming)",
                        g, localBlocks.count(g), remoteBlocks.count(g));
            }
        }
        if (slot == 0) {
            // later slots read only the head-sharded entries: skipping a replicated group there is the plan
            coverage.checkWholeExchange(localBlocks, "localBlocks");
        }
        boolean[] include = slot == 0 ? null : laterSlots;
        int written = localSpace.compute(localBlocks, include, localOut);
        remoteSpace.compute(remoteBlocks, include, remoteOut);
        return written;
    }

    /**
     * Returns how many descriptor pairs the entries a mask selects move through one source slot:
     * a part of a request, such as the layers of it computed so far. Check the whole request once
     * with {@link #indexCount} first: this checks no coverage.
     *
     * @param slot source slot.
     * @param blocks either side's selection.
     * @param entries one flag per entry of {@link #entries()}.
     * @return the size the index arrays need.
     */
    public int indexCountOf(int slot, BlockSelection blocks, boolean[] entries)
    {
        checkSlot(slot);
        checkGroups(requireNonNull(blocks, "blocks is null"), "blocks");
        return localSpace.countEntries(blocks, requireNonNull(entries, "entries is null"), slot != 0);
    }

    /**
     * Computes the descriptor indices of the entries a mask selects, as {@link #indices} does for
     * all of them. Allocates nothing.
     *
     * @param slot source slot.
     * @param localBlocks local block ids, as for {@link #indices}.
     * @param localOut receives the local indices; at least {@link #indexCountOf} long.
     * @param remoteBlocks remote block ids, as for {@link #indices}.
     * @param remoteOut receives the remote indices.
     * @param entries one flag per entry of {@link #entries()}.
     * @param scratch as long as {@code entries}; overwritten.
     * @return the number of pairs written.
     */
    public int indicesOf(int slot, BlockSelection localBlocks, int[] localOut, BlockSelection remoteBlocks, int[] remoteOut, boolean[] entries,
            boolean[] scratch)
    {
        checkSlot(slot);
        requireNonNull(entries, "entries is null");
        requireNonNull(scratch, "scratch is null");
        checkGroups(requireNonNull(localBlocks, "localBlocks is null"), "localBlocks");
        checkGroups(requireNonNull(remoteBlocks, "remoteBlocks is null"), "remoteBlocks");
        int written = localSpace.computeEntries(localBlocks, entries, slot != 0, scratch, requireNonNull(localOut, "localOut is null"));
        remoteSpace.computeEntries(remoteBlocks, entries, slot != 0, scratch, requireNonNull(remoteOut, "remoteOut is null"));
        return written;
    }

    /**
     * Tells whether some entry of this plan addresses a cache group, so that its ids move.
     *
     * @param group the group id.
     * @return true when an entry of that group, or of every group (-1), exists.
     */
    public boolean serves(int group)
    {
        return coverage.serves(group);
    }

    /**
     * Refuses a request whose ids name a cache group that none of its plans serves: across the
     * whole request (every stage plan of it), each group with ids must be addressed by some entry.
     * A stage plan skips the groups its stage pair does not hold; this is where a group no stage
     * holds is caught instead of silently not moving. When the local rank is itself a pipeline
     * stage, only the groups its own regions address are its to move; the engine's other stages
     * move the rest.
     *
     * @param plans every plan of one local rank the request moves through (all stage pairs).
     * @param blocks the request's ids per group, as given to the plans' {@link #indices}.
     * @throws KvBridgeException {@code BLOCK_OUT_OF_RANGE} naming the group, its id count and the
     *     plans, when a group with ids is served by none of them.
     */
    public static void checkServed(List<TransferPlan> plans, BlockSelection blocks)
    {
        requireNonNull(plans, "plans is null");
        requireNonNull(blocks, "blocks is null");
        for (int g = 0; g < blocks.groups(); g++) {
            if (blocks.countOf(g) == 0 || (!plans.isEmpty() && !plans.getFirst().coverage.required(g))) {
                continue;
            }
            boolean served = false;
            for (TransferPlan plan : plans) {
                served |= plan.serves(g);
            }
            if (!served) {
                if (plans.isEmpty()) {
                    throw Checks.failure(ErrorCode.BLOCK_OUT_OF_RANGE, "block ids given for cache group %d, but the request has no transfer plan to move them",
                            g);
                }
                throw plans.getFirst().coverage.unserved(g, blocks.countOf(g), "the request's ids", "its " + plans.size() + " plans (stage pairs "
                        + plans.stream().map(plan -> plan.local.rank() + "<->" + plan.remote.rank()).toList() + ")");
            }
        }
    }

    private void checkGroups(BlockSelection blocks, String name)
    {
        if (blocks.groups() != local.groups().size()) {
            throw Checks.failure(ErrorCode.LENGTH_MISMATCH, "%s has groups=%d but the geometry has %d cache groups (expected: block ids for every group, empty for groups without blocks)",
                    name, blocks.groups(), local.groups().size());
        }
    }

    private void checkSlot(int slot)
    {
        if (slot < 0 || slot >= tp.sources().size()) {
            throw Checks.invalid("slot=%d is outside [0, sourceCount=%d)", slot, tp.sources().size());
        }
    }

    @Override
    public String toString()
    {
        return "TransferPlan[" + local.rank() + " -> remote tpSize=" + tp.remoteTp() + ", entries=" + entries.size() + ", blockSizeRatio=" + ratio
                + ", remoteBlockSizeRatio=" + remoteRatio
                + ", sources=" + tp.sources() + ", rankOffsetFactor=" + tp.rankOffsetFactor() + ", localDescriptors=" + localSpace.size()
                + ", remoteDescriptors=" + remoteSpace.size() + "]";
    }
}
