package io.kvbridge.spi.geometry;

/**
 * Which of a layer's keys and values a region holds.
 *
 * <p>Most engines keep K and V of a token side by side ({@link #JOINT}): one region per layer.
 * Attention backends that keep them as two planes (a tensor shaped {@code [2, blocks, ...]}, or
 * each block holding all its keys and then all its values) are described with two regions per
 * layer, one {@link #KEY}, one {@link #VALUE}, of equal shape. A plane region pairs only with the
 * same plane on the peer, so a split-plane engine and a block-wise one exchange blocks directly;
 * a joint region orders bytes differently (K and V interleaved per token) and pairs only with a
 * joint region.
 */
public enum KvPart
{
    /** Keys and values of each token together: the layer's whole block. */
    JOINT,
    /** The key plane of the layer. */
    KEY,
    /** The value plane of the layer. */
    VALUE;

    /**
     * Tells whether this is one of the two planes.
     *
     * @return true for {@link #KEY} and {@link #VALUE}.
     */
    public boolean plane()
    {
        return this != JOINT;
    }
}
