package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;

/**
 * Builds a {@link Region} from named values, so that a byte count, a block count and a device
 * index cannot trade places the way they can in the record's long constructor. {@link #build()}
 * refuses a required value that was never set, naming it, and otherwise calls the record's
 * canonical constructor, which does every other check.
 *
 * <p>Required: {@link #base}, {@link #blockBytes}, {@link #capacity}, {@link #group}, the memory
 * ({@link #host()} or {@link #device(int)}), {@link #split} and {@link #members}. Defaults:
 * {@code stride = blockBytes} (blocks back to back), no packed members, {@link KvPart#JOINT}, no
 * runs (one strided run).
 *
 * <pre>{@code
 * Region keys = Region.builder("model.layers.0.self_attn/k")
 *         .base(address).blockBytes(16 * 1024).stride(32 * 1024).capacity(512)
 *         .group(0).device(0).split(SplitClass.SPLIT)
 *         .members("model.layers.0.self_attn").part(KvPart.KEY)
 *         .build();
 * }</pre>
 *
 * <p>Not thread-safe; build a region on one thread.
 */
public final class RegionBuilder
{
    private final String name;
    private long base;
    private boolean baseSet;
    private long blockBytes;
    private boolean blockBytesSet;
    private long stride;
    private boolean strideSet;
    private int capacity;
    private boolean capacitySet;
    private int groupId;
    private boolean groupSet;
    private MemoryKind memoryKind;
    private int device;
    private SplitClass split;
    private List<String> members;
    private List<PackedMember> packedMembers = List.of();
    private KvPart part = KvPart.JOINT;
    private List<BlockRun> runs = List.of();

    RegionBuilder(String name)
    {
        this.name = requireNonNull(name, "name is null");
    }

    /**
     * Sets the address of block 0.
     *
     * @param address positive.
     * @return this builder.
     */
    public RegionBuilder base(long address)
    {
        this.base = address;
        this.baseSet = true;
        return this;
    }

    /**
     * Sets the bytes transferred per block.
     *
     * @param bytes positive.
     * @return this builder.
     */
    public RegionBuilder blockBytes(long bytes)
    {
        this.blockBytes = bytes;
        this.blockBytesSet = true;
        return this;
    }

    /**
     * Sets the bytes between consecutive blocks; {@code blockBytes} when not set.
     *
     * @param bytes at least {@code blockBytes}.
     * @return this builder.
     */
    public RegionBuilder stride(long bytes)
    {
        this.stride = bytes;
        this.strideSet = true;
        return this;
    }

    /**
     * Sets the number of blocks.
     *
     * @param blocks positive.
     * @return this builder.
     */
    public RegionBuilder capacity(int blocks)
    {
        this.capacity = blocks;
        this.capacitySet = true;
        return this;
    }

    /**
     * Sets the cache group whose block ids address the region.
     *
     * @param groupId the group's id, or -1 when several groups overlay the region.
     * @return this builder.
     */
    public RegionBuilder group(int groupId)
    {
        this.groupId = groupId;
        this.groupSet = true;
        return this;
    }

    /**
     * Places the region in host memory.
     *
     * @return this builder.
     */
    public RegionBuilder host()
    {
        this.memoryKind = MemoryKind.HOST;
        this.device = 0;
        return this;
    }

    /**
     * Places the region in the memory of one device.
     *
     * @param index the device index; not negative.
     * @return this builder.
     */
    public RegionBuilder device(int index)
    {
        this.memoryKind = MemoryKind.DEVICE;
        this.device = index;
        return this;
    }

    /**
     * Sets how the block is divided among tensor-parallel ranks.
     *
     * @param splitClass split or replicated.
     * @return this builder.
     */
    public RegionBuilder split(SplitClass splitClass)
    {
        this.split = requireNonNull(splitClass, "split is null");
        return this;
    }

    /**
     * Sets the global names of the layers whose KV the region holds.
     *
     * @param layers in order; not empty.
     * @return this builder.
     */
    public RegionBuilder members(List<String> layers)
    {
        this.members = List.copyOf(requireNonNull(layers, "members is null"));
        return this;
    }

    /**
     * Sets the global names of the layers whose KV the region holds.
     *
     * @param layers in order; at least one.
     * @return this builder.
     */
    public RegionBuilder members(String... layers)
    {
        return members(List.of(requireNonNull(layers, "members is null")));
    }

    /**
     * Makes the region packed: each member layer's page inside the block.
     *
     * @param pages one per member layer, in the members' order.
     * @return this builder.
     */
    public RegionBuilder packedMembers(List<PackedMember> pages)
    {
        this.packedMembers = List.copyOf(requireNonNull(pages, "packedMembers is null"));
        return this;
    }

    /**
     * Sets which of its layers' keys and values the region holds; {@link KvPart#JOINT} when not set.
     *
     * @param kvPart joint, or one plane.
     * @return this builder.
     */
    public RegionBuilder part(KvPart kvPart)
    {
        this.part = requireNonNull(kvPart, "part is null");
        return this;
    }

    /**
     * Lays the region's blocks out as runs apart from each other; one strided run when not set.
     *
     * @param blockRuns in block order, the first at {@code base}, their blocks summing to the capacity.
     * @return this builder.
     */
    public RegionBuilder runs(List<BlockRun> blockRuns)
    {
        this.runs = List.copyOf(requireNonNull(blockRuns, "runs is null"));
        return this;
    }

    /**
     * Builds the region through its canonical constructor.
     *
     * @return the region.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} naming a required value
     *     that was not set, or any value the record refuses.
     */
    public Region build()
    {
        require(baseSet, "base", ".base(address)");
        require(blockBytesSet, "blockBytes", ".blockBytes(bytes)");
        require(capacitySet, "capacity", ".capacity(blocks)");
        require(groupSet, "group", ".group(groupId), or .group(-1) when several groups overlay it");
        require(memoryKind != null, "memory", ".host() or .device(index)");
        require(split != null, "split", ".split(SplitClass.SPLIT) or .split(SplitClass.REPLICATE)");
        require(members != null, "members", ".members(layerName, ...)");
        return new Region(name, base, blockBytes, strideSet ? stride : blockBytes, capacity, groupId, memoryKind, device, split, members,
                packedMembers, part, runs);
    }

    private void require(boolean set, String field, String fix)
    {
        checkArgument(set, "region %s: %s is not set (expected: %s before build())", name, field, fix);
    }
}
