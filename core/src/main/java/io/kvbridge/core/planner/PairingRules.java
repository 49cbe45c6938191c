package io.kvbridge.core.planner;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.PackedRows;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.geometry.StateComponent;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The checks that decide whether two geometries can be paired, run before any memory is
 * registered with a transport. Each failure names the values on both sides and what would make
 * them compatible.
 */
final class PairingRules
{
    private PairingRules()
    {
    }

    /**
     * Checks what both sides must agree on as a whole and returns the block size ratio: local
     * tokens / remote tokens when the local block is at least as large, minus remote / local when
     * the remote one is larger.
     */
    static int checkPeers(CacheGeometry local, CacheGeometry remote)
    {
        KvBridgeException.check(local.model().equals(remote.model()), ErrorCode.COMPATIBILITY_MISMATCH,
                "local model %s differs from remote model %s (expected: both engines serve the same model with the same cache dtype)",
                local.model(), remote.model());
        KvBridgeException.check(!local.groups().isEmpty(), ErrorCode.GEOMETRY_INVALID,
                "local geometry has no cache groups (expected: at least one, block ids are given per group)");
        check(local.groups().size() == remote.groups().size(),
                "local has %d cache groups but remote has %d (expected: the same groups on both sides)", local.groups().size(), remote.groups().size());
        for (int g = 0; g < local.groups().size(); g++) {
            CacheGroup mine = local.groups().get(g);
            CacheGroup theirs = remote.groups().get(g);
            if (mine.stateful() && theirs.stateful()) {
                checkStates(local, mine, theirs);
            }
            check(mine.equals(theirs), "cache group %d is %s locally but %s on the remote (expected: identical groups)", g, mine, theirs);
        }
        long localLogical = (long) local.blockTokens() * local.kernelBlocksPerLogical();
        long remoteLogical = (long) remote.blockTokens() * remote.kernelBlocksPerLogical();
        check(Math.max(localLogical, remoteLogical) % Math.min(localLogical, remoteLogical) == 0,
                "local scheduler blocks of %d tokens (blockTokens=%d x kernelBlocksPerLogical=%d) and remote ones of %d tokens (%d x %d) do not divide one "
                        + "another, so a prefix cannot be lined up in whole blocks (expected: one scheduler block size a multiple of the other)",
                localLogical, local.blockTokens(), local.kernelBlocksPerLogical(), remoteLogical, remote.blockTokens(), remote.kernelBlocksPerLogical());
        int localTokens = local.blockTokens();
        int remoteTokens = remote.blockTokens();
        if (remoteTokens > localTokens) {
            check(remoteTokens % localTokens == 0,
                    "remote blockTokens=%d is not a multiple of local blockTokens=%d (expected: one kernel block size a multiple of the other, e.g. 16 and 32)",
                    remoteTokens, localTokens);
            return -(remoteTokens / localTokens);
        }
        check(localTokens % remoteTokens == 0,
                "local blockTokens=%d is not a multiple of remote blockTokens=%d (expected: one kernel block size a multiple of the other, e.g. 16 and 32)",
                localTokens, remoteTokens);
        return localTokens / remoteTokens;
    }

    /** Names the first state component the sides describe differently, and a layer of the group. */
    private static void checkStates(CacheGeometry local, CacheGroup mine, CacheGroup theirs)
    {
        String layer = local.regions().stream().filter(region -> region.groupId() == mine.id()).map(region -> region.members().getFirst()).findFirst()
                .orElse("(none on this rank)");
        for (int c = 0; c < Math.max(mine.state().size(), theirs.state().size()); c++) {
            StateComponent a = c < mine.state().size() ? mine.state().get(c) : null;
            StateComponent b = c < theirs.state().size() ? theirs.state().get(c) : null;
            check(a != null && a.equals(b),
                    "state group %d (layer %s, ...), component %d: local %s but remote %s (expected: the same state components, dtypes and sizes on both "
                            + "sides; check that both engines run the same model with the same state dtypes)",
                    mine.id(), layer, c, describe(a), describe(b));
        }
    }

    private static String describe(StateComponent component)
    {
        return component == null ? "no component"
                : String.format(Locale.ROOT, "%s (dtype=%s splitDim=%d unitElements=%d)", component.name(), component.dtype(), component.splitDim(),
                        component.unitElements());
    }

    /**
     * Checks that the entries agree with the geometries they pair: each is what
     * {@link TransferEntry#whole} or {@link TransferEntry#ofLayer} builds from them (which checks
     * layers, groups and packing), and each side's regions share one memory kind.
     */
    static void checkEntries(CacheGeometry local, CacheGeometry remote, List<TransferEntry> entries)
    {
        KvBridgeException.check(!entries.isEmpty(), ErrorCode.ROUTING_FAILED, "no transfer entries: nothing would be moved (expected: at least one local region paired with a remote one)");
        for (int e = 0; e < entries.size(); e++) {
            TransferEntry entry = entries.get(e);
            TransferEntry rebuilt = entry.stateComponent()
                    ? TransferEntry.ofStateComponent(local, entry.localRegion(), remote, entry.remoteRegion(), entry.layer(), entry.groupId(), entry.component())
                    : entry.byLayer()
                            ? TransferEntry.ofLayer(local, entry.localRegion(), remote, entry.remoteRegion(), entry.layer(), entry.groupId())
                            : TransferEntry.whole(local, entry.localRegion(), remote, entry.remoteRegion());
            int group = entry.byLayer() ? entry.groupId() : entry.local().groupId();
            KvBridgeException.check(entry.stateComponent() || group < 0 || !local.groups().get(group).stateful(), ErrorCode.ROUTING_FAILED,
                    "entry %d moves %s of state group %d as one block, but a state moves component by component (a whole block would put the peer's "
                            + "x, B, C and SSM shares in the wrong places when tensor-parallel sizes differ); build its entries with TransferEntry.ofState",
                    e, entry.byLayer() ? "layer " + entry.layer() : "region " + entry.local().name(), group);
            KvBridgeException.check(rebuilt.equals(entry), ErrorCode.ROUTING_FAILED,
                    "entry %d (%s, group %d) carries local=%s remote=%s, which differs from the regions it names: local=%s remote=%s; build entries from the geometries they pair",
                    e, entry.byLayer() ? "layer " + entry.layer() : "whole region", entry.groupId(), entry.local(), entry.remote(), rebuilt.local(), rebuilt.remote());
        }
        checkOneMemory(entries.stream().map(TransferEntry::local).toList(), "local");
        checkOneMemory(entries.stream().map(TransferEntry::remote).toList(), "remote");
    }

    /** Checks that the regions one side uses lie in one kind of memory on one device. */
    static void checkOneMemory(List<Region> regions, String side)
    {
        Region first = regions.getFirst();
        for (Region region : regions) {
            KvBridgeException.check(region.memoryKind() == first.memoryKind() && region.device() == first.device(), ErrorCode.UNSUPPORTED,
                    "%s regions %s (%s device %d) and %s (%s device %d) lie in different memory: plans over mixed host and device memory are not supported yet",
                    side, first.name(), first.memoryKind(), first.device(), region.name(), region.memoryKind(), region.device());
        }
    }

    /** Returns the geometry one side uses for an entry. */
    static Region side(TransferEntry entry, boolean localSide)
    {
        return localSide ? entry.local() : entry.remote();
    }

    /** Returns the total KV heads of the layers a region holds. */
    static int headsOf(CacheGeometry geometry, Region region)
    {
        return region.groupId() >= 0 ? geometry.groups().get(region.groupId()).kvHeads() : geometry.model().totalKvHeads();
    }

    /**
     * Checks one entry's regions against each other: split class, plane, group routing, packing and
     * block bytes (rule by rule), and returns the entry's runs: how many head runs a block is moved
     * in. Blocks of unequal size move head by head when heads are outermost in a block, because a
     * sub-block of tokens is then one range per head; otherwise a block is one run.
     */
    static int checkEntry(CacheGeometry local, CacheGeometry remote, Region mine, Region theirs, TpPlan tp, int ratio, int remoteRatio)
    {
        if (mine.groupId() >= 0 && local.groups().get(mine.groupId()).stateful()) {
            checkStateComponent(local, mine, theirs, tp);
            return 1;
        }
        check(mine.part() == theirs.part(),
                "region %s holds the %s of its layers locally but remote region %s holds the %s (expected: the same part on both sides; joint K/V and split planes order bytes differently)",
                mine.name(), mine.part(), theirs.name(), theirs.part());
        check(mine.split() == theirs.split(),
                "region %s is %s locally but remote region %s is %s (expected: the same split class; heads-outermost and tokens-outermost blocks cannot be paired without a permutation)",
                mine.name(), mine.split(), theirs.name(), theirs.split());
        check(mine.groupId() == theirs.groupId(),
                "region %s addresses cache group %d locally but remote region %s addresses group %d (expected: the same region-to-group layout on both sides)",
                mine.name(), mine.groupId(), theirs.name(), theirs.groupId());
        Optional<String> wholeRow = PackedRows.wholeRowMismatch(local, mine, remote, theirs);
        check(wholeRow.isEmpty(), "%s", wholeRow.orElse(""));
        int runs = mine.split() == SplitClass.SPLIT && (ratio > 1 || remoteRatio > 1) ? Math.max(1, headsOf(local, mine) / tp.localTp()) : 1;
        check(mine.blockBytes() % ((long) ratio * runs) == 0,
                "region %s: local blockBytes=%d is not divisible by blockSizeRatio=%d x %d head runs (local blockTokens=%d / remote blockTokens=%d), so a block cannot be split into remote-sized sub-blocks",
                mine.name(), mine.blockBytes(), ratio, runs, local.blockTokens(), remote.blockTokens());
        String sizes = String.format(Locale.ROOT, "local blockTokens=%d, remote blockTokens=%d", local.blockTokens(), remote.blockTokens());
        switch (mine.split()) {
            case REPLICATE -> checkBlockBytes(mine, theirs, mine.blockBytes() * remoteRatio / ratio,
                    String.format(Locale.ROOT, "local blockBytes=%d x %d / %d for %s (a replicated block is whole on every rank)", mine.blockBytes(),
                            remoteRatio, ratio, sizes));
            case INTERLEAVED -> {
                KvBridgeException.check(tp.localTp() == tp.remoteTp(), ErrorCode.TP_UNSUPPORTED,
                        "region %s interleaves heads inside a block (tokens outermost), so it cannot be head-sliced between local tpSize=%d and remote tpSize=%d (expected: equal tensor-parallel sizes, or a heads-outermost layout)",
                        mine.name(), tp.localTp(), tp.remoteTp());
                checkBlockBytes(mine, theirs, mine.blockBytes() * remoteRatio / ratio,
                        String.format(Locale.ROOT, "local blockBytes=%d x %d / %d for %s", mine.blockBytes(), remoteRatio, ratio, sizes));
            }
            case SPLIT -> checkSplit(local, mine, theirs, tp, ratio, remoteRatio);
        }
        return runs;
    }

    private static void checkSplit(CacheGeometry local, Region mine, Region theirs, TpPlan tp, int ratio, int remoteRatio)
    {
        int heads = headsOf(local, mine);
        KvBridgeException.check(tp.localTp() == tp.remoteTp() || heads == tp.kvHeads(), ErrorCode.TP_UNSUPPORTED,
                "region %s has kvHeads=%d but the plan shards kvHeads=%d between local tpSize=%d and remote tpSize=%d (expected: one head count for all head-sharded regions when the sizes differ)",
                mine.name(), heads, tp.kvHeads(), tp.localTp(), tp.remoteTp());
        int localHeads = tp.localHeads();
        int remoteHeads = tp.remoteHeads();
        if (tp.sources().size() > 1) {
            // with unequal block sizes each source's heads move one by one, so its slice is whole heads
            KvBridgeException.check((ratio == 1 && remoteRatio == 1) || localHeads % tp.sources().size() == 0, ErrorCode.TP_UNSUPPORTED,
                    "region %s: reading heads from %d remote ranks (local tpSize=%d, remote tpSize=%d) with blocks of unequal size needs the local heads=%d in whole "
                            + "heads per source (expected: equal blockTokens on both sides, or head counts that split evenly)",
                    mine.name(), tp.sources().size(), tp.localTp(), tp.remoteTp(), localHeads);
            check(mine.blockBytes() % tp.sources().size() == 0 && (long) remoteHeads * tp.sources().size() == localHeads,
                    "region %s: local blockBytes=%d with localHeads=%d cannot be split into %d slices of remoteHeads=%d",
                    mine.name(), mine.blockBytes(), localHeads, tp.sources().size(), remoteHeads);
        }
        long scaled = mine.blockBytes() * remoteHeads * remoteRatio;
        check(scaled % localHeads == 0 && (scaled / localHeads) % ratio == 0,
                "region %s: local blockBytes=%d x remoteHeads=%d x %d / localHeads=%d / %d is not a whole number of bytes",
                mine.name(), mine.blockBytes(), remoteHeads, remoteRatio, localHeads, ratio);
        String how = String.format(Locale.ROOT,
                "local blockBytes=%d x remoteHeads=%d / localHeads=%d x remoteBlockSizeRatio=%d / blockSizeRatio=%d (local tpSize=%d and remote tpSize=%d shard kvHeads=%d)",
                mine.blockBytes(), remoteHeads, localHeads, remoteRatio, ratio, tp.localTp(), tp.remoteTp(), tp.kvHeads());
        checkBlockBytes(mine, theirs, scaled / localHeads / ratio, how);
        long share = mine.blockBytes() * remoteRatio / ratio;
        check((long) tp.rankOffsetFactor() * share + share / tp.sources().size() <= theirs.blockBytes(),
                "region %s: this rank's slice at rankOffsetFactor=%d x %d bytes lies outside remote blockBytes=%d",
                mine.name(), tp.rankOffsetFactor(), share, theirs.blockBytes());
    }

    /**
     * A state component (an entry of {@link TransferEntry#ofState}) is sharded along its own split
     * dimension: this rank reads every source's share when the peer has more ranks, or its own
     * share of one source's component when it has more, never a permuted slice. Its blocks are whole
     * states, so block sizes in tokens do not split them.
     */
    private static void checkStateComponent(CacheGeometry local, Region mine, Region theirs, TpPlan tp)
    {
        int larger = Math.max(tp.localTp(), tp.remoteTp());
        KvBridgeException.check(tp.localTp() == tp.remoteTp() || tp.kvHeads() >= larger, ErrorCode.TP_UNSUPPORTED,
                "state %s: the plan reads attention kvHeads=%d from %s (local tpSize=%d, remote tpSize=%d), but a state needs its share from every "
                        + "rank; attention heads fewer than the larger tpSize=%d are deduplicated across ranks (expected: kvHeads of at least %d, or equal "
                        + "tensor-parallel sizes)", mine.name(), tp.kvHeads(), tp.sources(), tp.localTp(), tp.remoteTp(), larger, larger);
        long expected = mine.blockBytes() * tp.localTp() / tp.remoteTp();
        check(theirs.blockBytes() == expected,
                "state %s: remote component holds %d bytes per state but local %d x local tpSize=%d / remote tpSize=%d = %d are expected; check that both "
                        + "engines run the same model with the same state dtypes", mine.name(), theirs.blockBytes(), mine.blockBytes(), tp.localTp(),
                tp.remoteTp(), expected);
        int sources = tp.sources().size();
        check(mine.blockBytes() % sources == 0 && (long) tp.rankOffsetFactor() * mine.blockBytes() + mine.blockBytes() / sources <= theirs.blockBytes(),
                "state %s: this rank's share (%d bytes from %d sources at rankOffsetFactor=%d) lies outside the remote component's %d bytes",
                mine.name(), mine.blockBytes(), sources, tp.rankOffsetFactor(), theirs.blockBytes());
    }

    private static void checkBlockBytes(Region mine, Region theirs, long expected, String how)
    {
        check(theirs.blockBytes() == expected,
                "remote region %s has blockBytes=%d but local region %s needs %d = %s; check that both sides run the same model, cache dtype and layout",
                theirs.name(), theirs.blockBytes(), mine.name(), expected, how);
    }

    private static void check(boolean condition, String format, Object... args)
    {
        KvBridgeException.check(condition, ErrorCode.GEOMETRY_INCOMPATIBLE, format, args);
    }

    /** Returns whether a region's blocks are the same on every rank. */
    static boolean replicated(Region region)
    {
        return region.split() == SplitClass.REPLICATE;
    }
}
