package io.kvbridge.spi.geometry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** {@link Rank#pipeline} and {@link Rank#tensor}: ranks and sizes by name, swaps refused where written. */
final class NamedRankTest
{
    @Test
    void buildsWhatTheConstructorBuilds()
    {
        assertEquals(new Rank(1, 2, 3, 4), Rank.pipeline(1, 2).tensor(3, 4));
        assertEquals(new Rank(0, 1, 2, 4), Rank.tensor(2, 4));
        assertEquals(Rank.single(), Rank.tensor(0, 1));
        assertEquals(Rank.single(), Rank.pipeline(0, 1).tensor(0, 1));
    }

    @Test
    void refusesASwappedPipelineRankNamingBoth()
    {
        assertRefused("pipeline(ppRank=4, ppSize=2): the rank is not below the size", () -> Rank.pipeline(4, 2));
        assertRefused("pipeline(ppRank=2, ppSize=2): the rank is not below the size", () -> Rank.pipeline(2, 2));
    }

    @Test
    void refusesASwappedTensorRankNamingBoth()
    {
        assertRefused("tensor(tpRank=8, tpSize=2): the rank is not below the size", () -> Rank.pipeline(0, 2).tensor(8, 2));
        assertRefused("tensor(tpRank=4, tpSize=4): the rank is not below the size", () -> Rank.tensor(4, 4));
    }

    @Test
    void refusesANegativeRankOrAnEmptySize()
    {
        assertRefused("pipeline(ppRank=-1, ppSize=2): ppRank is negative", () -> Rank.pipeline(-1, 2));
        assertRefused("tensor(tpRank=0, tpSize=0): tpSize is not positive", () -> Rank.tensor(0, 0));
    }

    private static void assertRefused(String prefix, Executable named)
    {
        KvBridgeException refused = assertThrows(KvBridgeException.class, named);
        assertEquals(ErrorCode.INVALID_ARGUMENT, refused.code());
        assertTrue(refused.getMessage().startsWith("KVB/InvalidArgument: " + prefix), refused.getMessage());
    }
}
