package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The scheduler's free lists: attention token blocks in one, each Mamba group's states in one of its own. */
final class BlockPoolTest
{
    private static final DemoModel HYBRID = DemoModel.of(DemoModel.HYBRID_SSM, "hma");

    @Test
    void aRequestTakesOneStateWhateverItsLengthAndStatesDoNotComeFromTheTokenBlocks()
    {
        BlockPool pool = new BlockPool(HYBRID, 40, 3, DemoModel.BLOCK_TOKENS);
        int[][] longPrompt = pool.allocate(30);
        assertEquals(30, longPrompt[0].length, "every token block of the full-attention group");
        assertArrayEquals(new int[] {0}, longPrompt[1], "one state, the first of the state list");
        int[][] shortPrompt = pool.allocate(2);
        assertArrayEquals(new int[] {30, 31}, shortPrompt[0], "token ids continue where the last request's ended: no state took one");
        assertArrayEquals(new int[] {1}, shortPrompt[1]);
        Map<String, Object> audit = pool.audit();
        assertEquals(Map.of("capacity", 40, "peakHeld", 32, "free", 8), audit.get("tokenBlocks"));
        assertEquals(Map.of("group1", Map.of("capacity", 3, "peakHeld", 2, "free", 1), "statesTaken", 2L), audit.get("stateBlocks"));
    }

    @Test
    void statesRunOutPerRequestNotPerTokenBlockAndComeBackOnRelease()
    {
        BlockPool pool = new BlockPool(HYBRID, 100, 2, DemoModel.BLOCK_TOKENS);
        int[][] first = pool.allocate(1);
        pool.allocate(1);
        IllegalStateException exhausted = assertThrows(IllegalStateException.class, () -> pool.allocate(1));
        assertTrue(exhausted.getMessage().contains("state pool of group 1") && exhausted.getMessage().contains("all 2 states"), exhausted.getMessage());
        pool.release(first);
        assertEquals(1, pool.allocate(1)[1].length, "the released state is lent again");
    }

    @Test
    void aModelWithoutStateShowsNoStateBlocks()
    {
        BlockPool pool = new BlockPool(DemoModel.of("hma"), 10, 0, DemoModel.BLOCK_TOKENS);
        pool.allocate(2);
        assertEquals(null, pool.audit().get("stateBlocks"));
    }
}
