package io.kvbridge.backend.ucx;

/**
 * Where data starts inside memory the transport allocates. A streaming copy runs 5 to 15 % slower
 * when its source and destination addresses differ by a multiple of 256 MiB, i.e. agree in every
 * bit above the page offset up to bit 27 (measured on AMD EPYC for 4 KiB to 256 KiB blocks; the L1
 * way predictor hashes those bits). Two equal-sized mappings placed next to each other, which is
 * how a JVM's address space usually fills, are exactly such a pair: a producer's pool and the
 * consumer's pool mapped below it. Starting each allocation 1 to 63 pages into a mapping that much
 * larger breaks the agreement for adjacent mappings, whichever of the two lies above the other.
 *
 * @param start where this instance's sequence of offsets starts, in pages; drawn per instance so
 *     that two processes rarely pick the same offsets in the same order.
 */
record AllocationStagger(int start)
{
    static final long PAGE_BYTES = 4096;
    /** Offsets are 1 to this many pages. */
    static final int MAX_PAGES = 63;
    // an offset costs at most this fraction of the allocation; smaller allocations are not staggered
    private static final long MAX_SHARE = 16;
    // steps through all offsets before repeating (coprime with MAX_PAGES)
    private static final int STRIDE = 37;

    /**
     * Returns the offset of the {@code sequence}-th allocation of {@code bytes} bytes.
     *
     * @param bytes what the caller asked for.
     * @param sequence how many allocations this instance made before.
     * @return a multiple of {@link #PAGE_BYTES}, 0 when the allocation is smaller than 16 pages.
     */
    long offset(long bytes, long sequence)
    {
        long limit = Math.min(MAX_PAGES, bytes / (MAX_SHARE * PAGE_BYTES));
        if (limit == 0) {
            return 0;
        }
        long pages = 1 + Math.floorMod(start + sequence * STRIDE, (long) MAX_PAGES);
        return Math.min(pages, limit) * PAGE_BYTES;
    }
}
