package io.kvbridge.core.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Per-request index computation for tests of the planner and of what builds on it. */
public final class PlanRequests
{
    private PlanRequests()
    {
    }

    /**
     * Returns a request's local and remote indices through source slot 0.
     *
     * @param plan the plan.
     * @param local local block ids.
     * @param remote remote block ids.
     * @return {@code {local indices, remote indices}}.
     */
    public static int[][] indices(TransferPlan plan, BlockSelection local, BlockSelection remote)
    {
        int count = plan.indexCount(0, local);
        int[] localOut = new int[count];
        int[] remoteOut = new int[count];
        assertEquals(count, plan.indices(0, local, localOut, remote, remoteOut));
        return new int[][] {localOut, remoteOut};
    }
}
