package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * The first half of a {@link Rank} built by name: a pipeline stage, waiting for its tensor-parallel
 * rank. Made by {@link Rank#pipeline(int, int)}; each half is refused on its own, so a rank and a
 * size passed the wrong way round are caught where they were written.
 *
 * <pre>{@code
 * Rank rank = Rank.pipeline(1, 2).tensor(3, 4); // stage 1 of 2, tensor rank 3 of 4
 * }</pre>
 *
 * @param ppRank pipeline stage, in {@code [0, ppSize)}.
 * @param ppSize number of pipeline stages; positive.
 */
public record PipelineStage(int ppRank, int ppSize)
{
    /** Validates the stage, naming both values when the rank is not below the size. */
    public PipelineStage
    {
        checkRankOfSize("pipeline", "ppRank", ppRank, "ppSize", ppSize);
    }

    /**
     * Completes the rank with this worker's tensor-parallel rank.
     *
     * @param tpRank tensor-parallel rank, in {@code [0, tpSize)}.
     * @param tpSize number of tensor-parallel ranks; positive.
     * @return the rank.
     */
    public Rank tensor(int tpRank, int tpSize)
    {
        checkRankOfSize("tensor", "tpRank", tpRank, "tpSize", tpSize);
        return new Rank(ppRank, ppSize, tpRank, tpSize);
    }

    static void checkRankOfSize(String step, String rankName, int rank, String sizeName, int size)
    {
        checkArgument(size > 0, "%s(%s=%d, %s=%d): %s is not positive", step, rankName, rank, sizeName, size, sizeName);
        checkArgument(rank >= 0, "%s(%s=%d, %s=%d): %s is negative", step, rankName, rank, sizeName, size, rankName);
        checkArgument(rank < size, "%s(%s=%d, %s=%d): the rank is not below the size (expected: %s(rank, size) with 0 <= rank < size; "
                + "were they swapped?)", step, rankName, rank, sizeName, size, step);
    }
}
