package io.kvbridge.backend.nixl;

/**
 * How NIXL (from 1.4.0) sees a prepared list, and so how many descriptors it makes of a request:
 * the exact merge rule, computed on the Java side so {@code operations()} is known when the post
 * returns, not only after the transfer.
 *
 * <p>At preparation NIXL compresses the list into runs: consecutive descriptors of one length, in
 * one registration, at increasing addresses a constant stride apart. A request then merges a pair
 * with the next ones only while both indices advance by one inside a run on each side and the runs
 * are dense (stride equal to length) with equal strides. So pairs that are contiguous in memory but
 * not consecutive in the lists stay separate, unlike the transport toolkit's address-based merge.
 * NIXL 0.10.1 through 1.3 merged by address instead; this transport is tested on 1.4.0.
 *
 * <p>Immutable; two arrays the size of the list, built once per prepared list.
 */
final class StrideRuns
{
    // per descriptor: index one past the last descriptor of its run, and the run's stride
    private final int[] runEnds;
    private final long[] strides;
    private final long[] lengths;

    private StrideRuns(int[] runEnds, long[] strides, long[] lengths)
    {
        this.runEnds = runEnds;
        this.strides = strides;
        this.lengths = lengths;
    }

    /**
     * Splits a list into NIXL's runs.
     *
     * @param addresses descriptor addresses.
     * @param lengths descriptor lengths; kept, not copied.
     * @param regionIds per descriptor, the registration it lies in.
     * @return the runs.
     */
    static StrideRuns of(long[] addresses, long[] lengths, int[] regionIds)
    {
        int n = addresses.length;
        int[] runEnds = new int[n];
        long[] strides = new long[n];
        int start = 0;
        // a run of one descriptor has the stride of its length, so it counts as dense
        long stride = n == 0 ? 0 : lengths[0];
        for (int i = 1; i <= n; i++) {
            boolean continues = false;
            if (i < n && lengths[i] == lengths[start] && regionIds[i] == regionIds[start]) {
                long step = addresses[i] - addresses[i - 1];
                if (i - start == 1) {
                    continues = Long.compareUnsigned(addresses[i], addresses[i - 1]) > 0;
                    if (continues) {
                        stride = step;
                    }
                }
                else {
                    continues = step == stride;
                }
            }
            if (!continues) {
                for (int d = start; d < i; d++) {
                    runEnds[d] = i;
                    strides[d] = stride;
                }
                if (i < n) {
                    start = i;
                    stride = lengths[i];
                }
            }
        }
        return new StrideRuns(runEnds, strides, lengths);
    }

    /**
     * Counts the descriptors NIXL makes of a request; allocates nothing. The indices were checked.
     *
     * @param local the local list's runs.
     * @param localIndices local indices.
     * @param remote the remote list's runs.
     * @param remoteIndices remote indices.
     * @param count pairs.
     * @return the descriptors after merging.
     */
    static int merged(StrideRuns local, int[] localIndices, StrideRuns remote, int[] remoteIndices, int count)
    {
        int descriptors = 0;
        int i = 0;
        while (i < count) {
            int l = localIndices[i];
            int r = remoteIndices[i];
            int sequence = 1;
            long stride = local.strides[l];
            if (stride == local.lengths[l] && stride == remote.strides[r]) {
                int cap = Math.min(Math.min(local.runEnds[l] - l, remote.runEnds[r] - r), count - i);
                while (sequence < cap && localIndices[i + sequence] == l + sequence && remoteIndices[i + sequence] == r + sequence) {
                    sequence++;
                }
            }
            descriptors++;
            i += sequence;
        }
        return descriptors;
    }
}
