package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.memory.MemoryKind;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A transfer unit inside an allocation: descriptor {@code b} of the region covers
 * {@code [base + b * stride, base + b * stride + blockBytes)}.
 *
 * <p>A region may instead be made of {@link BlockRun runs}, for a cache whose blocks do not sit at
 * one stride from one base (pages allocated apart): block {@code b} is then found in the run that
 * holds it, counting blocks run after run, and each run lies in an allocation of its own or shares
 * one. Without runs ({@link #runs()} empty) the region is the single strided run above.
 *
 * <pre>
 *   base                 base + stride          base + 2 * stride
 *   |&lt;-- blockBytes --&gt;|  |&lt;-- blockBytes --&gt;|  |&lt;-- ...
 *   [ block 0 ........ ]..[ block 1 ........ ]..[ block 2
 * </pre>
 *
 * @param name a name unique within the geometry (usually derived from its first layer).
 * @param base address of block 0.
 * @param blockBytes bytes transferred per block; positive.
 * @param stride bytes between consecutive blocks; at least {@code blockBytes}.
 * @param capacity number of blocks; positive.
 * @param groupId the cache group whose block ids address this region, or -1 when several groups
 *     overlay it (every group's block ids then address it).
 * @param memoryKind host or device memory.
 * @param device device index (0 for host memory).
 * @param split how the block is divided among tensor-parallel ranks.
 * @param members global names of the layers whose KV the region holds, in order; not empty.
 * @param packedMembers for a packed region, each member layer's page inside the block; empty otherwise.
 * @param part which of its layers' keys and values the region holds: {@link KvPart#JOINT} for both,
 *     or one plane of a layer kept as two planes.
 * @param runs the region's blocks as runs apart from each other, in block order, the first at
 *     {@code base}, their blocks summing to {@code capacity}; empty for one strided run.
 */
public record Region(
        String name,
        long base,
        long blockBytes,
        long stride,
        int capacity,
        int groupId,
        MemoryKind memoryKind,
        int device,
        SplitClass split,
        List<String> members,
        List<PackedMember> packedMembers,
        KvPart part,
        List<BlockRun> runs)
{
    /**
     * Creates a region of one strided run.
     *
     * @param name see the record.
     * @param base see the record.
     * @param blockBytes see the record.
     * @param stride see the record.
     * @param capacity see the record.
     * @param groupId see the record.
     * @param memoryKind see the record.
     * @param device see the record.
     * @param split see the record.
     * @param members see the record.
     * @param packedMembers see the record.
     * @param part see the record.
     */
    public Region(String name, long base, long blockBytes, long stride, int capacity, int groupId, MemoryKind memoryKind, int device, SplitClass split,
            List<String> members, List<PackedMember> packedMembers, KvPart part)
    {
        this(name, base, blockBytes, stride, capacity, groupId, memoryKind, device, split, members, packedMembers, part, List.of());
    }

    /**
     * Creates a region that holds its layers' keys and values together ({@link KvPart#JOINT}).
     *
     * @param name see the record.
     * @param base see the record.
     * @param blockBytes see the record.
     * @param stride see the record.
     * @param capacity see the record.
     * @param groupId see the record.
     * @param memoryKind see the record.
     * @param device see the record.
     * @param split see the record.
     * @param members see the record.
     * @param packedMembers see the record.
     */
    public Region(String name, long base, long blockBytes, long stride, int capacity, int groupId, MemoryKind memoryKind, int device, SplitClass split,
            List<String> members, List<PackedMember> packedMembers)
    {
        this(name, base, blockBytes, stride, capacity, groupId, memoryKind, device, split, members, packedMembers, KvPart.JOINT);
    }

    /**
     * Starts a region from named values, the readable form of the record's long constructors.
     *
     * <pre>{@code
     * Region layer0 = Region.builder("model.layers.0.self_attn")
     *         .base(address).blockBytes(32 * 1024).capacity(512)
     *         .group(0).device(0).split(SplitClass.SPLIT)
     *         .members("model.layers.0.self_attn")
     *         .build();
     * }</pre>
     *
     * @param name a name unique within the geometry.
     * @return a builder; see {@link RegionBuilder} for what is required and what defaults.
     */
    public static RegionBuilder builder(String name)
    {
        return new RegionBuilder(name);
    }

    /** Validates the values and copies the lists. */
    public Region
    {
        requireNonNull(name, "name is null");
        requireNonNull(memoryKind, "memoryKind is null");
        requireNonNull(split, "split is null");
        requireNonNull(part, "part is null");
        members = List.copyOf(requireNonNull(members, "members is null"));
        packedMembers = List.copyOf(requireNonNull(packedMembers, "packedMembers is null"));
        runs = List.copyOf(requireNonNull(runs, "runs is null"));
        checkArgument(!name.isEmpty(), "region name is empty");
        checkArgument(base > 0, "region %s: base=%d is not positive", name, base);
        checkArgument(blockBytes > 0, "region %s: blockBytes=%d is not positive", name, blockBytes);
        checkArgument(stride >= blockBytes, "region %s: stride=%d is smaller than blockBytes=%d (blocks would overlap)", name, stride, blockBytes);
        checkArgument(capacity > 0, "region %s: capacity=%d is not positive", name, capacity);
        checkArgument(groupId >= -1, "region %s: groupId=%d is below -1", name, groupId);
        checkArgument(device >= 0, "region %s: device=%d is negative", name, device);
        checkArgument(memoryKind == MemoryKind.DEVICE || device == 0, "region %s: device=%d given for host memory", name, device);
        checkArgument(!members.isEmpty(), "region %s has no member layers", name);
        checkArgument(!part.plane() || packedMembers.isEmpty(), "region %s: a %s plane cannot be packed (describe packed layers with their keys and values joint)",
                name, part);
        if (runs.isEmpty()) {
            checkSpan(name, base, capacity, stride, blockBytes);
        }
        else {
            checkArgument(runs.getFirst().base() == base, "region %s: base=0x%x but its first run starts at 0x%x (expected: the same address)",
                    name, base, runs.getFirst().base());
            long blocks = 0;
            for (BlockRun run : runs) {
                requireNonNull(run, "run is null");
                checkSpan(name, run.base(), run.blocks(), stride, blockBytes);
                blocks += run.blocks();
            }
            checkArgument(blocks == capacity, "region %s: its %d runs hold %d blocks but capacity=%d (expected: equal)", name, runs.size(), blocks,
                    capacity);
        }
        Set<String> seen = new HashSet<>();
        for (String member : members) {
            checkArgument(member != null && !member.isEmpty(), "region %s has an empty member layer name", name);
            checkArgument(seen.add(member), "region %s lists layer %s twice", name, member);
        }
        if (!packedMembers.isEmpty()) {
            checkArgument(packedMembers.size() == members.size(),
                    "region %s: %d packed members for %d member layers (expected: one per layer)", name, packedMembers.size(), members.size());
            for (int i = 0; i < packedMembers.size(); i++) {
                PackedMember member = packedMembers.get(i);
                checkArgument(member.layer().equals(members.get(i)),
                        "region %s: packed member %d is %s but member layer %d is %s (expected: same order)", name, i, member.layer(), i, members.get(i));
                checkArgument(member.offset() <= blockBytes - member.pageBytes(),
                        "region %s: layer %s page [offset=%d, +%d) exceeds blockBytes=%d", name, member.layer(), member.offset(), member.pageBytes(), blockBytes);
            }
        }
    }

    private static void checkSpan(String name, long base, int blocks, long stride, long blockBytes)
    {
        try {
            Math.addExact(base, Math.addExact(Math.multiplyExact((long) blocks - 1, stride), blockBytes));
        }
        catch (ArithmeticException e) {
            throw new io.kvbridge.spi.KvBridgeException(io.kvbridge.spi.ErrorCode.INVALID_ARGUMENT, String.format(java.util.Locale.ROOT,
                    "region %s: base=%d + (blocks=%d - 1) * stride=%d + blockBytes=%d overflows a 64-bit address",
                    name, base, blocks, stride, blockBytes), e);
        }
    }

    /**
     * Returns the runs the region's blocks lie in: its {@link #runs()}, or for a region without
     * runs the single run of all its blocks from {@code base}.
     *
     * @return one run or more, in block order.
     */
    public List<BlockRun> spans()
    {
        return runs.isEmpty() ? List.of(new BlockRun(base, capacity)) : runs;
    }

    /**
     * Returns the address one past the last byte of the last block.
     *
     * @return {@code base + (capacity - 1) * stride + blockBytes}.
     */
    public long end()
    {
        return runs.isEmpty() ? base + (capacity - 1L) * stride + blockBytes : runs.getLast().end(stride, blockBytes);
    }

    /**
     * Returns the address of a block.
     *
     * @param block index in {@code [0, capacity)}.
     * @return {@code base + block * stride}, or for a region of runs the address of the block in
     *     the run that holds it.
     */
    public long blockAddress(int block)
    {
        if (runs.isEmpty()) {
            return base + block * stride;
        }
        // indexed, not iterated: descriptor lists and grants call this per block
        int rest = block;
        for (int r = 0; r < runs.size(); r++) {
            BlockRun run = runs.get(r);
            if (rest < run.blocks()) {
                return run.base() + rest * stride;
            }
            rest -= run.blocks();
        }
        throw new io.kvbridge.spi.KvBridgeException(io.kvbridge.spi.ErrorCode.BLOCK_OUT_OF_RANGE, String.format(java.util.Locale.ROOT,
                "region %s: block %d is outside its %d blocks", name, block, capacity));
    }

    /**
     * Returns the same region narrowed to other bytes of each block: a view of one layer, or of one
     * plane, that keeps every other property.
     *
     * @param viewName name of the view.
     * @param viewBase address of the view's block 0.
     * @param viewBlockBytes bytes of the view in each block.
     * @param viewGroupId cache group addressing the view.
     * @param viewMembers layers the view holds.
     * @return a region with this region's stride, capacity, memory, split and part, and its runs
     *     moved by as many bytes as the view's base.
     */
    public Region narrowed(String viewName, long viewBase, long viewBlockBytes, int viewGroupId, List<String> viewMembers)
    {
        long shift = viewBase - base;
        List<BlockRun> viewRuns = runs.stream().map(run -> new BlockRun(run.base() + shift, run.blocks())).toList();
        return new Region(viewName, viewBase, viewBlockBytes, stride, capacity, viewGroupId, memoryKind, device, split, viewMembers, List.of(), part,
                viewRuns);
    }

    /**
     * Tells whether two regions share a byte of their blocks ({@link StridedBlocks#shareBytes}):
     * regions that interleave inside one allocation share none although their extents overlap.
     *
     * @param other another region.
     * @return true when some block of one overlaps some block of the other.
     */
    public boolean sharesBytesWith(Region other)
    {
        for (BlockRun mine : spans()) {
            for (BlockRun theirs : other.spans()) {
                if (StridedBlocks.shareBytes(mine.base(), blockBytes, stride, mine.blocks(), theirs.base(), other.blockBytes, other.stride, theirs.blocks())) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Tells whether the region is packed (several layers' pages in one block).
     *
     * @return true when packed members are given.
     */
    public boolean packed()
    {
        return !packedMembers.isEmpty();
    }
}
