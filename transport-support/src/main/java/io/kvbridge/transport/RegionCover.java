package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;

/**
 * Which region each descriptor of a list lies in, for regions a transport keeps itself, such as the
 * ranges a peer advertised with their remote keys: the counterpart of {@link Registrations#cover}
 * for a remote list. {@code regionIds[i]} indexes {@code regions}, the distinct regions in order of
 * first use, which is what an {@link OwnedPreparedList}'s region ids and {@link DescriptorPairs}
 * expect.
 *
 * @param regionIds per descriptor, an index into {@code regions}.
 * @param regions the regions the descriptors lie in.
 * @param <T> the transport's region type.
 */
public record RegionCover<T>(int[] regionIds, List<T> regions)
{
    /**
     * The regions to search.
     *
     * @param <T> the transport's region type.
     */
    public interface Regions<T>
    {
        /**
         * Finds the region holding a whole range.
         *
         * @param address start of the range.
         * @param length bytes in the range.
         * @return the region, or null.
         */
        T find(long address, long length);

        /**
         * Tells whether a region holds a whole range.
         *
         * @param region one that {@link #find} returned.
         * @param address start of the range.
         * @param length bytes in the range.
         * @return true when {@code region} holds the whole range.
         */
        boolean contains(T region, long address, long length);
    }

    /** Makes the error for a descriptor that lies outside every region. */
    @FunctionalInterface
    public interface Outside
    {
        /**
         * Builds the error.
         *
         * @param index the descriptor's index.
         * @param address its address.
         * @param length its length.
         * @return the error to throw, such as {@code DESCRIPTOR_OUT_OF_RANGE}.
         */
        KvBridgeException error(int index, long address, long length);
    }

    /**
     * Finds the region of every descriptor.
     *
     * @param <T> the transport's region type.
     * @param addresses descriptor addresses.
     * @param lengths descriptor lengths, as many.
     * @param regions where to search.
     * @param outside the error for the first descriptor outside every region.
     * @return which region each descriptor lies in.
     * @throws KvBridgeException what {@code outside} builds.
     */
    public static <T> RegionCover<T> of(long[] addresses, long[] lengths, Regions<T> regions, Outside outside)
    {
        requireNonNull(regions, "regions is null");
        requireNonNull(outside, "outside is null");
        int[] ids = new int[addresses.length];
        IdentityHashMap<T, Integer> seen = new IdentityHashMap<>();
        List<T> used = new ArrayList<>();
        T last = null;
        int lastId = -1;
        for (int i = 0; i < addresses.length; i++) {
            // consecutive descriptors usually share a region: test the last one before searching
            if (last == null || !regions.contains(last, addresses[i], lengths[i])) {
                last = regions.find(addresses[i], lengths[i]);
                if (last == null) {
                    throw outside.error(i, addresses[i], lengths[i]);
                }
                T found = last;
                lastId = seen.computeIfAbsent(found, ignored -> {
                    used.add(found);
                    return used.size() - 1;
                });
            }
            ids[i] = lastId;
        }
        return new RegionCover<>(ids, List.copyOf(used));
    }
}
