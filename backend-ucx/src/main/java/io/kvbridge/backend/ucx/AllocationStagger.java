package io.kvbridge.backend.ucx;

/**
 * Where data starts inside memory the transport allocates. Two equal-sized pools mapped next to each
 * other, which is how a JVM's address space usually fills, differ by exactly their size; for
 * 256 MiB pools source and destination then agree in every address bit from 12 to 27, and a
 * same-host copy of 4 KiB to 256 KiB blocks between them runs 5 to 15 % slower (measured on AMD
 * EPYC with {@code benchmarks/native/copy_aliasing.c}; most likely the L1 way predictor, which
 * hashes those bits). Starting each allocation a few pages into a mapping that much larger breaks
 * the agreement, whichever of two adjacent mappings lies above the other.
 *
 * <p>Blocks of 1 MiB and more, which glibc copies with a vector loop instead of {@code rep movsb}
 * on AMD, gain or lose up to 5 % with an offset, changing sign from run to run, except that
 * offsets of 1 to 3 pages cost them 2 to 7 % in every run; so offsets start at 8 pages.
 *
 * @param start where this instance's sequence of offsets starts; drawn per instance so that two
 *     processes rarely pick the same offsets in the same order.
 */
record AllocationStagger(int start)
{
    static final long PAGE_BYTES = 4096;
    /** Offsets are {@code MIN_PAGES} to {@code MAX_PAGES} pages. */
    static final int MIN_PAGES = 8;
    static final int MAX_PAGES = 63;
    static final int OFFSETS = MAX_PAGES - MIN_PAGES + 1;
    // an offset costs at most this fraction of the allocation; smaller allocations are not staggered
    private static final long MAX_SHARE = 16;
    // steps through all offsets before repeating (coprime with OFFSETS)
    private static final int STRIDE = 37;

    /**
     * Returns the offset of the {@code sequence}-th allocation of {@code bytes} bytes.
     *
     * @param bytes what the caller asked for.
     * @param sequence how many allocations this instance made before.
     * @return a multiple of {@link #PAGE_BYTES}; 0 below {@code 16 * MIN_PAGES} pages (512 KiB).
     */
    long offset(long bytes, long sequence)
    {
        long limit = Math.min(MAX_PAGES, bytes / (MAX_SHARE * PAGE_BYTES));
        if (limit < MIN_PAGES) {
            return 0;
        }
        long pages = MIN_PAGES + Math.floorMod(start + sequence * STRIDE, (long) OFFSETS);
        return Math.min(pages, limit) * PAGE_BYTES;
    }
}
