package io.kvbridge.core.engine;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.FailurePolicy;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.spi.ErrorCode;

/** Builds the failure a consumer reports from the groups its failed transfers would have written. */
final class InvalidBlocks
{
    private InvalidBlocks()
    {
    }

    /**
     * The failure of a request: the exchanged blocks of every invalid group, and the earliest
     * position of one of them in the engine's own lists (clipped sliding-window blocks come first in
     * a group's list and are never written, so the position is offset by them).
     *
     * @param requested the blocks as the engine gave them.
     * @param exchanged each group's exchanged (trailing) blocks.
     * @param invalidGroups the invalid groups as a mask; {@link LayoutRules#ALL_GROUPS} for all.
     */
    static ReceiveFailure failure(String requestId, ErrorCode code, String message, BlockIds requested, int[][] exchanged, long invalidGroups,
            FailurePolicy policy)
    {
        int[][] invalid = new int[exchanged.length][];
        int longest = 0;
        int first = Integer.MAX_VALUE;
        for (int g = 0; g < exchanged.length; g++) {
            longest = Math.max(longest, requested.size(g));
            boolean bad = g >= Long.SIZE ? invalidGroups == LayoutRules.ALL_GROUPS : (invalidGroups & (1L << g)) != 0;
            invalid[g] = bad ? exchanged[g] : new int[0];
            if (bad && exchanged[g].length > 0) {
                first = Math.min(first, requested.size(g) - exchanged[g].length);
            }
        }
        return new ReceiveFailure(requestId, code, message, BlockIds.of(invalid), policy, first == Integer.MAX_VALUE ? longest : first);
    }

    /**
     * The failure of a request whose blocks a digest check refused: in each mismatching group the
     * exchanged blocks from its first mismatch on (the blocks before it matched their digests, so
     * an engine that recomputes keeps them), and the earliest such position in the engine's lists.
     *
     * @param firstMismatch per group, the position in its exchanged blocks of the first mismatch; -1 when it matched.
     */
    static ReceiveFailure mismatched(String requestId, ErrorCode code, String message, BlockIds requested, int[][] exchanged, int[] firstMismatch,
            FailurePolicy policy)
    {
        int[][] invalid = new int[exchanged.length][];
        int longest = 0;
        int first = Integer.MAX_VALUE;
        for (int g = 0; g < exchanged.length; g++) {
            longest = Math.max(longest, requested.size(g));
            int from = firstMismatch[g];
            invalid[g] = from < 0 ? new int[0] : java.util.Arrays.copyOfRange(exchanged[g], from, exchanged[g].length);
            if (from >= 0) {
                first = Math.min(first, requested.size(g) - exchanged[g].length + from);
            }
        }
        return new ReceiveFailure(requestId, code, message, BlockIds.of(invalid), policy, first == Integer.MAX_VALUE ? longest : first);
    }

    /** The exchanged blocks of the groups in a mask; {@link LayoutRules#ALL_GROUPS} for all. */
    static BlockIds ofGroups(int[][] exchanged, long groups)
    {
        int[][] chosen = new int[exchanged.length][];
        for (int g = 0; g < exchanged.length; g++) {
            boolean in = g >= Long.SIZE ? groups == LayoutRules.ALL_GROUPS : (groups & (1L << g)) != 0;
            chosen[g] = in ? exchanged[g] : new int[0];
        }
        return BlockIds.of(chosen);
    }
}
