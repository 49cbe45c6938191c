package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import java.util.Arrays;

/**
 * The CRC32C of each block of a request as its producer rank held it at {@code prefillFinished}, in
 * the order of the request's block ids per cache group, with a fingerprint of the rank's cache shape
 * (layout, block sizes, regions and their order) that the digests are only comparable under. A
 * block's digest covers its bytes in every region that serves its group, region by region in the
 * geometry's order, each logical block's kernel blocks in order. Immutable: arrays are copied in
 * and out.
 */
public final class BlockDigests
{
    /** No digests: the producer computes none. */
    public static final BlockDigests NONE = new BlockDigests(0, new int[0][]);

    private final int shape;
    private final int[][] crcs;

    private BlockDigests(int shape, int[][] crcs)
    {
        this.shape = shape;
        this.crcs = crcs;
    }

    /**
     * Creates digests.
     *
     * @param shape the producer rank's shape fingerprint.
     * @param crcs one array per cache group, one CRC32C (its 32 bits as an {@code int}) per block id.
     * @return the digests.
     */
    public static BlockDigests of(int shape, int[]... crcs)
    {
        requireNonNull(crcs, "crcs is null");
        checkArgument(crcs.length > 0, "crcs has no cache group (expected: one array per group; BlockDigests.NONE for no digests)");
        int[][] copy = new int[crcs.length][];
        for (int g = 0; g < crcs.length; g++) {
            copy[g] = requireNonNull(crcs[g], "group " + g + " is null").clone();
        }
        return new BlockDigests(shape, copy);
    }

    /** {@return whether these are {@link #NONE}} */
    public boolean isNone()
    {
        return crcs.length == 0;
    }

    /** {@return the producer rank's shape fingerprint} */
    public int shape()
    {
        return shape;
    }

    /** {@return the number of cache groups} */
    public int groupCount()
    {
        return crcs.length;
    }

    /**
     * Returns the number of digests of a group.
     *
     * @param group the group.
     * @return its count, the producer's block count of the group.
     */
    public int size(int group)
    {
        return crcs[group].length;
    }

    /**
     * Returns one digest.
     *
     * @param group the group.
     * @param position the block's position in the group's ids.
     * @return its CRC32C's 32 bits.
     */
    public int get(int group, int position)
    {
        return crcs[group][position];
    }

    /**
     * Tells whether the digests match a request's block ids: one per id of every group.
     *
     * @param blocks the request's block ids.
     * @return whether the counts agree.
     */
    public boolean fits(BlockIds blocks)
    {
        if (blocks.groupCount() != crcs.length) {
            return false;
        }
        for (int g = 0; g < crcs.length; g++) {
            if (blocks.size(g) != crcs[g].length) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof BlockDigests other && shape == other.shape && Arrays.deepEquals(crcs, other.crcs);
    }

    @Override
    public int hashCode()
    {
        return 31 * shape + Arrays.deepHashCode(crcs);
    }

    /** {@return the digest count per group and the shape, not the digests} */
    @Override
    public String toString()
    {
        if (isNone()) {
            return "BlockDigests[none]";
        }
        int[] counts = new int[crcs.length];
        for (int g = 0; g < crcs.length; g++) {
            counts[g] = crcs[g].length;
        }
        return String.format(java.util.Locale.ROOT, "BlockDigests[shape=%08x, counts=%s]", shape, Arrays.toString(counts));
    }
}
