package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * One worker of an engine: its pipeline-parallel stage and tensor-parallel rank, with the sizes.
 *
 * @param ppRank pipeline stage, in {@code [0, ppSize)}.
 * @param ppSize number of pipeline stages; positive.
 * @param tpRank tensor-parallel rank, in {@code [0, tpSize)}.
 * @param tpSize number of tensor-parallel ranks; positive.
 */
public record Rank(int ppRank, int ppSize, int tpRank, int tpSize)
{
    /** Validates the ranges. */
    public Rank
    {
        checkArgument(ppSize > 0, "ppSize=%d is not positive", ppSize);
        checkArgument(tpSize > 0, "tpSize=%d is not positive", tpSize);
        checkArgument(ppRank >= 0 && ppRank < ppSize, "ppRank=%d is outside [0, ppSize=%d)", ppRank, ppSize);
        checkArgument(tpRank >= 0 && tpRank < tpSize, "tpRank=%d is outside [0, tpSize=%d)", tpRank, tpSize);
    }

    /**
     * Returns the only rank of an engine without parallelism.
     *
     * @return rank (0 of 1, 0 of 1).
     */
    public static Rank single()
    {
        return new Rank(0, 1, 0, 1);
    }

    /**
     * Starts a rank by name with its pipeline stage, so that ranks and sizes cannot be swapped
     * silently the way the record's four ints can.
     *
     * <pre>{@code
     * Rank rank = Rank.pipeline(ppRank, ppSize).tensor(tpRank, tpSize);
     * Rank tpOnly = Rank.pipeline(0, 1).tensor(2, 4); // same as Rank.tensor(2, 4)
     * }</pre>
     *
     * @param ppRank pipeline stage, in {@code [0, ppSize)}.
     * @param ppSize number of pipeline stages; positive.
     * @return the stage; {@link PipelineStage#tensor(int, int)} completes the rank.
     */
    public static PipelineStage pipeline(int ppRank, int ppSize)
    {
        return new PipelineStage(ppRank, ppSize);
    }

    /**
     * Returns a rank of an engine without pipeline parallelism, by name.
     *
     * <pre>{@code
     * Rank rank = Rank.tensor(tpRank, tpSize); // pipeline stage 0 of 1
     * }</pre>
     *
     * @param tpRank tensor-parallel rank, in {@code [0, tpSize)}.
     * @param tpSize number of tensor-parallel ranks; positive.
     * @return rank (0 of 1, tpRank of tpSize).
     */
    public static Rank tensor(int tpRank, int tpSize)
    {
        return pipeline(0, 1).tensor(tpRank, tpSize);
    }

    @Override
    public String toString()
    {
        return "pp" + ppRank + "/" + ppSize + ":tp" + tpRank + "/" + tpSize;
    }
}
