package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import java.util.Arrays;

/**
 * What a scheduler keeps of a failed receive under {@link FailurePolicy#RECOMPUTE}: the tokens
 * before the first invalid block, per cache group and for the request. Block lists are positional:
 * position {@code p} of every group's list (as given to {@link ConsumerConnector#blocksAllocated})
 * holds the request's tokens {@code [p × blockTokens, (p + 1) × blockTokens)} of the received range.
 *
 * <pre>
 *   requested  g0 = [4, 5, 6, 7]   g1 = [9, 10, 11, 12]
 *   invalid    g0 = []             g1 = [11, 12]        blockTokens = 16
 *   kept       g0 = 64             g1 = 32              request = 32 (recompute from token 32)
 * </pre>
 */
public final class KeptTokens
{
    private KeptTokens()
    {
    }

    /**
     * Returns, per cache group, the tokens of the blocks before the group's first invalid block
     * (all of the group's tokens when none is invalid).
     *
     * @param failure the reported failure.
     * @param requested the blocks the request was received into, as given to {@code blocksAllocated}.
     * @param blockTokens tokens per (logical) block.
     * @return one count per group.
     */
    public static long[] perGroup(ReceiveFailure failure, BlockIds requested, int blockTokens)
    {
        requireNonNull(failure, "failure is null");
        requireNonNull(requested, "requested is null");
        checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        BlockIds invalid = failure.invalidBlocks();
        checkArgument(invalid.groupCount() == requested.groupCount(), "failure of %s lists %d groups but %d were requested", failure.requestId(),
                invalid.groupCount(), requested.groupCount());
        long[] kept = new long[requested.groupCount()];
        for (int g = 0; g < kept.length; g++) {
            int[] bad = invalid.group(g);
            Arrays.sort(bad);
            int valid = requested.size(g);
            for (int p = 0; p < requested.size(g); p++) {
                if (Arrays.binarySearch(bad, requested.get(g, p)) >= 0) {
                    valid = p;
                    break;
                }
            }
            kept[g] = (long) valid * blockTokens;
        }
        return kept;
    }

    /**
     * Returns the tokens the engine keeps: the fewest kept by any group that requested blocks, so
     * every group is recomputed from the earliest invalid token on. A request that requested no
     * block keeps 0.
     *
     * @param failure the reported failure.
     * @param requested the blocks the request was received into.
     * @param blockTokens tokens per (logical) block.
     * @return the number of leading tokens whose KV is valid in every group.
     */
    public static long kept(ReceiveFailure failure, BlockIds requested, int blockTokens)
    {
        long[] perGroup = perGroup(failure, requested, blockTokens);
        long kept = Long.MAX_VALUE;
        for (int g = 0; g < perGroup.length; g++) {
            if (requested.size(g) > 0) {
                kept = Math.min(kept, perGroup[g]);
            }
        }
        return kept == Long.MAX_VALUE ? 0 : kept;
    }
}
