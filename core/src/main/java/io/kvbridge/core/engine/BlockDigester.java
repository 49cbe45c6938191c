package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.BlockDigests;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Computes the CRC32C of a rank's blocks, as {@link BlockDigests} define it: for one logical block
 * of a group, its bytes in every region that serves the group (the group's own regions and those
 * several groups overlay), region by region in the geometry's order, each region's kernel blocks of
 * the logical block in order. Two ranks' digests are comparable when their {@link #shape()}s are
 * equal: same layout, block sizes, regions and members in the same order.
 *
 * <p>Reads host memory through one direct buffer per gibibyte of each host allocation, made once,
 * and one {@link CRC32C} (which the JDK computes with the processor's CRC32 instructions), so a
 * digest allocates nothing per block. Thread-safe: one lock, since the buffers' positions and the
 * checksum are state.
 */
final class BlockDigester
{
    private static final long CHUNK = 1L << 30;

    private final CacheGeometry geometry;
    private final int shape;
    private final int factor;
    // per group: the regions whose bytes its blocks' digests cover, in the geometry's order
    private final Region[][] regionsOfGroup;
    // host allocations sorted by address, and their buffers, one per gibibyte
    private final long[] bases;
    private final long[] ends;
    private final ByteBuffer[][] chunks;
    private final CRC32C crc = new CRC32C();

    BlockDigester(CacheGeometry geometry)
    {
        this.geometry = requireNonNull(geometry, "geometry is null");
        this.shape = shapeOf(geometry);
        this.factor = geometry.kernelBlocksPerLogical();
        this.regionsOfGroup = new Region[geometry.groups().size()][];
        for (int g = 0; g < regionsOfGroup.length; g++) {
            List<Region> serving = new ArrayList<>();
            for (Region region : geometry.regions()) {
                if (region.groupId() == g || region.groupId() == -1) {
                    serving.add(region);
                }
            }
            regionsOfGroup[g] = serving.toArray(Region[]::new);
        }
        List<Allocation> host = geometry.allocations().stream().filter(a -> a.kind() == MemoryKind.HOST)
                .sorted(Comparator.comparingLong(Allocation::address)).toList();
        bases = new long[host.size()];
        ends = new long[host.size()];
        chunks = new ByteBuffer[host.size()][];
        for (int a = 0; a < bases.length; a++) {
            Allocation allocation = host.get(a);
            bases[a] = allocation.address();
            ends[a] = allocation.address() + allocation.bytes();
            MemorySegment whole = MemorySegment.ofAddress(allocation.address()).reinterpret(allocation.bytes());
            chunks[a] = new ByteBuffer[(int) ((allocation.bytes() + CHUNK - 1) / CHUNK)];
            for (int c = 0; c < chunks[a].length; c++) {
                long offset = c * CHUNK;
                chunks[a][c] = whole.asSlice(offset, Math.min(CHUNK, allocation.bytes() - offset)).asByteBuffer();
            }
        }
    }

    /** {@return this rank's shape fingerprint: digests of two ranks compare only when theirs are equal} */
    int shape()
    {
        return shape;
    }

    /**
     * Digests a request's blocks.
     *
     * @param ids logical block ids per group, already checked against the capacity.
     * @return one digest per id.
     */
    synchronized BlockDigests digest(int[][] ids)
    {
        int[][] crcs = new int[ids.length][];
        for (int g = 0; g < ids.length; g++) {
            crcs[g] = new int[ids[g].length];
            for (int i = 0; i < ids[g].length; i++) {
                crcs[g][i] = block(g, ids[g][i]);
            }
        }
        return ids.length == 0 ? BlockDigests.NONE : BlockDigests.of(shape, crcs);
    }

    /**
     * Finds the first block of a group whose bytes differ from the producer's digest; allocates nothing.
     *
     * @param group the group.
     * @param ids this rank's ids of the group's exchanged blocks.
     * @param expected the producer's digests.
     * @param offset the producer's position of {@code ids[0]}: its list is end-trimmed to this rank's.
     * @return the position in {@code ids} of the first mismatch, or -1 when every block matches.
     */
    synchronized int firstMismatch(int group, int[] ids, BlockDigests expected, int offset)
    {
        for (int i = 0; i < ids.length; i++) {
            if (block(group, ids[i]) != expected.get(group, offset + i)) {
                return i;
            }
        }
        return -1;
    }

    /** {@return one logical block's CRC32C} */
    private int block(int group, int logical)
    {
        crc.reset();
        for (Region region : regionsOfGroup[group]) {
            for (int k = 0; k < factor; k++) {
                update(region.blockAddress(logical * factor + k), region.blockBytes());
            }
        }
        return (int) crc.getValue();
    }

    private void update(long address, long bytes)
    {
        int a = allocationOf(address);
        long offset = address - bases[a];
        long left = bytes;
        while (left > 0) {
            ByteBuffer chunk = chunks[a][(int) (offset / CHUNK)];
            int from = (int) (offset % CHUNK);
            int length = (int) Math.min(left, chunk.capacity() - from);
            chunk.limit(from + length).position(from);
            crc.update(chunk);
            offset += length;
            left -= length;
        }
    }

    private int allocationOf(long address)
    {
        int low = 0;
        int high = bases.length - 1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            if (bases[mid] > address) {
                high = mid - 1;
            }
            else if (ends[mid] <= address) {
                low = mid + 1;
            }
            else {
                return mid;
            }
        }
        // the geometry validated every region inside an allocation of its kind
        throw new IllegalStateException("address 0x" + Long.toHexString(address) + " lies in no host allocation of " + geometry.layoutName());
    }

    /**
     * The fingerprint of what a block's digest covers: layout, block tokens, kernel blocks per logical
     * block, and each region's group, bytes per block, plane, split class and members, in order.
     * Addresses and capacities are left out: they differ between engines whose blocks are alike.
     */
    static int shapeOf(CacheGeometry geometry)
    {
        StringBuilder text = new StringBuilder().append(geometry.layoutName()).append('|').append(geometry.blockTokens()).append('|')
                .append(geometry.kernelBlocksPerLogical()).append('|').append(geometry.groups().size());
        for (Region region : geometry.regions()) {
            text.append('|').append(region.groupId()).append(',').append(region.blockBytes()).append(',').append(region.part()).append(',')
                    .append(region.split()).append(',').append(region.members()).append(',').append(region.packedMembers());
        }
        CRC32C shape = new CRC32C();
        shape.update(text.toString().getBytes(StandardCharsets.UTF_8));
        return (int) shape.getValue();
    }
}
