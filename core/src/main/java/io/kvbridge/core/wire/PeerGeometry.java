package io.kvbridge.core.wire;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Region;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * A peer's geometry after the checks that untrusted input needs beyond the records' own, with its
 * region bounds in primitive arrays. It numbers the peer's blocks as descriptors, region by region
 * in region order ({@code firstDescriptor(r) + block}), and is the one gate through which a remote
 * descriptor index is computed or checked: an index outside the peer's advertised regions fails
 * here and can never be posted.
 *
 * <pre>
 *   descriptor:  0 .. cap0-1 | cap0 .. cap0+cap1-1 | ...
 *   region:      0           | 1                   | ...
 *   address:     base(r) + (index - firstDescriptor(r)) * stride(r), length blockBytes(r)
 * </pre>
 */
public final class PeerGeometry
{
    private final CacheGeometry geometry;
    private final long[] bases;
    private final long[] ends;
    private final long[] blockBytes;
    private final long[] strides;
    private final int[] capacities;
    // firstDescriptors[r] is the index of region r's block 0; the last entry is the total
    private final int[] firstDescriptors;

    private PeerGeometry(CacheGeometry geometry)
    {
        this.geometry = geometry;
        int count = geometry.regions().size();
        this.bases = new long[count];
        this.ends = new long[count];
        this.blockBytes = new long[count];
        this.strides = new long[count];
        this.capacities = new int[count];
        this.firstDescriptors = new int[count + 1];
        long total = 0;
        for (int r = 0; r < count; r++) {
            Region region = geometry.regions().get(r);
            bases[r] = region.base();
            ends[r] = region.end();
            blockBytes[r] = region.blockBytes();
            strides[r] = region.stride();
            capacities[r] = region.capacity();
            firstDescriptors[r] = (int) total;
            total += region.capacity();
        }
        firstDescriptors[count] = (int) total;
    }

    /**
     * Checks a peer's geometry and builds the view.
     *
     * @param geometry the peer's geometry, already validated by its records.
     * @return the view.
     * @throws KvBridgeException with {@link ErrorCode#GEOMETRY_INVALID} when the geometry advertises
     *     no regions, more blocks than descriptor indices can number, more layers than the model
     *     has, regions without a group to address them, or overlapping packed pages.
     */
    public static PeerGeometry of(CacheGeometry geometry)
    {
        requireNonNull(geometry, "geometry is null");
        List<Region> regions = geometry.regions();
        check(!regions.isEmpty(), "the geometry has no regions (expected: at least one region to transfer)");
        check(!geometry.groups().isEmpty(), "the geometry has %d regions but no cache groups to address them", regions.size());
        long total = 0;
        int layers = 0;
        for (Region region : regions) {
            total += region.capacity();
            // a layer kept as K/V planes is counted once, by its key plane
            layers += region.part() == KvPart.VALUE ? 0 : region.members().size();
            checkPackedPages(region);
        }
        check(total <= Integer.MAX_VALUE, "the regions' capacities sum to %d blocks, more than descriptor indices can number (%d)",
                total, Integer.MAX_VALUE);
        check(layers <= geometry.model().layerCount(), "the regions hold %d layers but the model has layerCount=%d",
                layers, geometry.model().layerCount());
        return new PeerGeometry(geometry);
    }

    private static void checkPackedPages(Region region)
    {
        List<PackedMember> pages = new ArrayList<>(region.packedMembers());
        pages.sort(Comparator.comparingLong(PackedMember::offset));
        for (int i = 1; i < pages.size(); i++) {
            PackedMember previous = pages.get(i - 1);
            PackedMember page = pages.get(i);
            check(previous.offset() + previous.pageBytes() <= page.offset(),
                    "region %s: packed pages of layers %s [offset=%d, +%d) and %s [offset=%d, +%d) overlap", region.name(),
                    previous.layer(), previous.offset(), previous.pageBytes(), page.layer(), page.offset(), page.pageBytes());
        }
    }

    private static void check(boolean condition, String format, Object... args)
    {
        KvBridgeException.check(condition, ErrorCode.GEOMETRY_INVALID, format, args);
    }

    /** {@return the validated geometry} */
    public CacheGeometry geometry()
    {
        return geometry;
    }

    /** {@return the number of regions} */
    public int regionCount()
    {
        return capacities.length;
    }

    /** {@return the number of descriptors, the sum of all capacities} */
    public int descriptorCount()
    {
        return firstDescriptors[capacities.length];
    }

    /**
     * Returns the address of a region's block 0.
     *
     * @param region index.
     * @return the base address.
     */
    public long regionBase(int region)
    {
        return bases[checkRegion(region)];
    }

    /**
     * Returns the address one past a region's last byte.
     *
     * @param region index.
     * @return the end address.
     */
    public long regionEnd(int region)
    {
        return ends[checkRegion(region)];
    }

    /**
     * Returns the bytes of one block of a region.
     *
     * @param region index.
     * @return block bytes.
     */
    public long blockBytes(int region)
    {
        return blockBytes[checkRegion(region)];
    }

    /**
     * Returns the distance between consecutive blocks of a region.
     *
     * @param region index.
     * @return stride in bytes.
     */
    public long stride(int region)
    {
        return strides[checkRegion(region)];
    }

    /**
     * Returns a region's capacity.
     *
     * @param region index.
     * @return blocks.
     */
    public int capacity(int region)
    {
        return capacities[checkRegion(region)];
    }

    /**
     * Returns the descriptor index of a region's block 0.
     *
     * @param region index.
     * @return the first descriptor index.
     */
    public int firstDescriptor(int region)
    {
        return firstDescriptors[checkRegion(region)];
    }

    /**
     * Computes the descriptor index of one block, checking both coordinates.
     *
     * @param region index in {@code [0, regionCount())}.
     * @param block index in {@code [0, capacity(region))}.
     * @return {@code firstDescriptor(region) + block}.
     * @throws KvBridgeException with {@link ErrorCode#INDEX_OUT_OF_RANGE} for an unknown region,
     *     {@link ErrorCode#BLOCK_OUT_OF_RANGE} for a block beyond the region's capacity.
     */
    public int descriptorIndex(int region, int block)
    {
        checkRegion(region);
        if (block < 0 || block >= capacities[region]) {
            throw new KvBridgeException(ErrorCode.BLOCK_OUT_OF_RANGE, String.format(Locale.ROOT,
                    "block=%d is outside region %d (%s) of capacity=%d advertised by the peer", block, region,
                    geometry.regions().get(region).name(), capacities[region]));
        }
        return firstDescriptors[region] + block;
    }

    /**
     * Checks descriptor indices before they are posted. Allocates nothing.
     *
     * @param indices the indices.
     * @param offset of the first index to check.
     * @param count of indices to check.
     * @throws KvBridgeException with {@link ErrorCode#INDEX_OUT_OF_RANGE} naming the first index
     *     outside {@code [0, descriptorCount())}.
     */
    public void checkDescriptorIndices(int[] indices, int offset, int count)
    {
        requireNonNull(indices, "indices is null");
        KvBridgeException.checkArgument(offset >= 0 && count >= 0 && offset <= indices.length - count,
                "offset=%d count=%d do not fit indices.length=%d", offset, count, indices.length);
        int limit = descriptorCount();
        for (int i = offset; i < offset + count; i++) {
            if (indices[i] < 0 || indices[i] >= limit) {
                throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, String.format(Locale.ROOT,
                        "descriptor index=%d at position %d is outside the %d descriptors the peer advertised", indices[i], i, limit));
            }
        }
    }

    /**
     * Returns the region holding a descriptor.
     *
     * @param index descriptor index in {@code [0, descriptorCount())}.
     * @return the region index.
     */
    public int regionOfDescriptor(int index)
    {
        checkDescriptor(index);
        // the last region whose first descriptor is <= index; empty regions do not exist
        int low = 0;
        int high = capacities.length - 1;
        while (low < high) {
            int middle = (low + high + 1) >>> 1;
            if (firstDescriptors[middle] <= index) {
                low = middle;
            }
            else {
                high = middle - 1;
            }
        }
        return low;
    }

    /**
     * Returns the address of a descriptor.
     *
     * @param index descriptor index in {@code [0, descriptorCount())}.
     * @return the block's address in the peer's memory.
     */
    public long descriptorAddress(int index)
    {
        int region = regionOfDescriptor(index);
        return geometry.regions().get(region).blockAddress(index - firstDescriptors[region]);
    }

    /**
     * Returns the length of a descriptor.
     *
     * @param index descriptor index in {@code [0, descriptorCount())}.
     * @return the region's block bytes.
     */
    public long descriptorLength(int index)
    {
        return blockBytes[regionOfDescriptor(index)];
    }

    private int checkRegion(int region)
    {
        if (region < 0 || region >= capacities.length) {
            throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, String.format(Locale.ROOT,
                    "region=%d is outside the %d regions the peer advertised", region, capacities.length));
        }
        return region;
    }

    private void checkDescriptor(int index)
    {
        if (index < 0 || index >= descriptorCount()) {
            throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, String.format(Locale.ROOT,
                    "descriptor index=%d is outside the %d descriptors the peer advertised", index, descriptorCount()));
        }
    }
}
