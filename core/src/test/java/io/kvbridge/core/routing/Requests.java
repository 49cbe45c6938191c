package io.kvbridge.core.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.planner.TransferPlan;

/** Per-request index computation for tests. */
final class Requests
{
    private Requests()
    {
    }

    /** Returns the local and remote indices of a request through slot 0. */
    static int[][] indices(TransferPlan plan, BlockSelection local, BlockSelection remote)
    {
        int count = plan.indexCount(0, local);
        int[] localOut = new int[count];
        int[] remoteOut = new int[count];
        assertEquals(count, plan.indices(0, local, localOut, remote, remoteOut));
        return new int[][] {localOut, remoteOut};
    }
}
