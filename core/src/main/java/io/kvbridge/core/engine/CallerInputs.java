package io.kvbridge.core.engine;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.RequestIds;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import java.util.Arrays;
import java.util.Locale;

/**
 * The checks both roles make on what the engine hands a connector (request ids, block ids against
 * the cache's capacity) before anything is queued for the worker.
 */
final class CallerInputs
{
    private CallerInputs()
    {
    }

    /** Per group, the number of logical blocks every region the group addresses can hold. */
    static int[] logicalCapacities(CacheGeometry geometry)
    {
        int[] capacity = new int[geometry.groups().size()];
        Arrays.fill(capacity, Integer.MAX_VALUE);
        for (Region region : geometry.regions()) {
            int logical = region.capacity() / geometry.kernelBlocksPerLogical();
            for (int g = 0; g < capacity.length; g++) {
                if (region.groupId() < 0 || region.groupId() == g) {
                    capacity[g] = Math.min(capacity[g], logical);
                }
            }
        }
        return capacity;
    }

    /** Refuses block ids of the wrong group count or past what every region of their group holds. */
    static void checkBlocks(BlockIds blocks, int[] logicalCapacity, String side)
    {
        KvBridgeException.checkArgument(blocks.groupCount() == logicalCapacity.length,
                "%s block ids have %d groups but the cache has %d (expected: one list per cache group, empty when unused)",
                side, blocks.groupCount(), logicalCapacity.length);
        for (int g = 0; g < logicalCapacity.length; g++) {
            for (int i = 0; i < blocks.size(g); i++) {
                int id = blocks.get(g, i);
                if (id >= logicalCapacity[g]) {
                    throw new KvBridgeException(ErrorCode.BLOCK_OUT_OF_RANGE, String.format(Locale.ROOT,
                            "%s block id=%d of group %d is outside the cache: every region of that group holds %d logical blocks", side, id, g,
                            logicalCapacity[g]));
                }
            }
        }
    }

    /** Refuses a request id {@link RequestIds} does not accept, with its reason. */
    static void checkId(String requestId)
    {
        String problem = RequestIds.problem(requestId);
        KvBridgeException.checkArgument(problem == null, "%s", problem);
    }
}
