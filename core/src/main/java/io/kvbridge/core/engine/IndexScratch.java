package io.kvbridge.core.engine;

/**
 * The descriptor indices a rank fills for each transfer it posts, on its side and on its peer's,
 * grown (rarely) to the largest transfer seen so that posting allocates nothing. One per rank,
 * worker thread only: the arrays are read back by the post that follows the fill.
 */
final class IndexScratch
{
    private int[] mine = new int[256];
    private int[] theirs = new int[256];

    /** Makes room for a transfer of {@code size} descriptor pairs; call before {@link #mine()} and {@link #theirs()}. */
    void ensure(int size)
    {
        if (mine.length < size) {
            int grown = Math.max(size, mine.length * 2);
            mine = new int[grown];
            theirs = new int[grown];
        }
    }

    /** {@return the indices into this rank's own list} */
    int[] mine()
    {
        return mine;
    }

    /** {@return the indices into the peer's list} */
    int[] theirs()
    {
        return theirs;
    }
}
