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
        KvPart part)
{
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

    /** Validates the values and copies the lists. */
    public Region
    {
        requireNonNull(name, "name is null");
        requireNonNull(memoryKind, "memoryKind is null");
        requireNonNull(split, "split is null");
        requireNonNull(part, "part is null");
        members = List.copyOf(requireNonNull(members, "members is null"));
        packedMembers = List.copyOf(requireNonNull(packedMembers, "packedMembers is null"));
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
        long span;
        try {
            span = Math.addExact(Math.multiplyExact((long) capacity - 1, stride), blockBytes);
            Math.addExact(base, span);
        }
        catch (ArithmeticException e) {
            throw new io.kvbridge.spi.KvBridgeException(io.kvbridge.spi.ErrorCode.INVALID_ARGUMENT, String.format(java.util.Locale.ROOT,
                    "region %s: base=%d + (capacity=%d - 1) * stride=%d + blockBytes=%d overflows a 64-bit address",
                    name, base, capacity, stride, blockBytes), e);
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

    /**
     * Returns the address one past the last byte of the last block.
     *
     * @return {@code base + (capacity - 1) * stride + blockBytes}.
     */
    public long end()
    {
        return base + (capacity - 1L) * stride + blockBytes;
    }

    /**
     * Returns the address of a block.
     *
     * @param block index in {@code [0, capacity)}.
     * @return {@code base + block * stride}.
     */
    public long blockAddress(int block)
    {
        return base + block * stride;
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
     * @return a region with this region's stride, capacity, memory, split and part.
     */
    public Region narrowed(String viewName, long viewBase, long viewBlockBytes, int viewGroupId, List<String> viewMembers)
    {
        return new Region(viewName, viewBase, viewBlockBytes, stride, capacity, viewGroupId, memoryKind, device, split, viewMembers, List.of(), part);
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
        return StridedBlocks.shareBytes(base, blockBytes, stride, capacity, other.base, other.blockBytes, other.stride, other.capacity);
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
