package io.kvbridge.core.sidechannel;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

import io.kvbridge.spi.geometry.Rank;

/**
 * The key a side channel serves a rank's metadata under.
 *
 * @param ppRank pipeline stage; non-negative.
 * @param tpRank tensor-parallel rank; non-negative.
 */
public record RankKey(int ppRank, int tpRank)
{
    /** Validates the values. */
    public RankKey
    {
        checkArgument(ppRank >= 0, "ppRank=%d is negative", ppRank);
        checkArgument(tpRank >= 0, "tpRank=%d is negative", tpRank);
    }

    /**
     * Returns the key of a rank.
     *
     * @param rank the rank.
     * @return its {@code (ppRank, tpRank)}.
     */
    public static RankKey of(Rank rank)
    {
        return new RankKey(rank.ppRank(), rank.tpRank());
    }

    /**
     * Tells whether a rank has this key.
     *
     * @param rank the rank.
     * @return true when both coordinates match.
     */
    public boolean matches(Rank rank)
    {
        return rank.ppRank() == ppRank && rank.tpRank() == tpRank;
    }

    @Override
    public String toString()
    {
        return "pp" + ppRank + ":tp" + tpRank;
    }
}
