package io.kvbridge.examples.demo;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The block allocator of one engine, kept by the scheduler. A hybrid allocator's pools are shared by
 * its attention groups, so their token blocks come from one free list, and every pipeline stage
 * uses the same ids for its own layers. A Mamba group's blocks are whole per-request states in
 * regions of their own: each such group has its own free list of states, and a request takes one
 * state from it, however many token blocks its prompt has.
 */
public final class BlockPool
{
    private final DemoModel model;
    private final int blockTokens;
    private final int tokenCapacity;
    private final int stateCapacity;
    private final ArrayDeque<Integer> tokenBlocks = new ArrayDeque<>();
    // per group: the free list of a state group, null for an attention group
    private final List<ArrayDeque<Integer>> states = new ArrayList<>();
    private int tokenPeak;
    private final int[] statePeak;
    private long statesTaken;

    /** A pool for a model without Mamba groups: token blocks only. */
    BlockPool(DemoModel model, int tokenCapacity, int blockTokens)
    {
        this(model, tokenCapacity, 0, blockTokens);
    }

    BlockPool(DemoModel model, int tokenCapacity, int stateCapacity, int blockTokens)
    {
        this.model = model;
        this.blockTokens = blockTokens;
        this.tokenCapacity = tokenCapacity;
        this.stateCapacity = stateCapacity;
        for (int block = 0; block < tokenCapacity; block++) {
            tokenBlocks.add(block);
        }
        this.statePeak = new int[model.groups().size()];
        for (int g = 0; g < statePeak.length; g++) {
            ArrayDeque<Integer> free = null;
            if (model.groups().get(g).stateful()) {
                free = new ArrayDeque<>();
                for (int state = 0; state < stateCapacity; state++) {
                    free.add(state);
                }
            }
            states.add(free);
        }
    }

    /** Takes the blocks of a prompt for every group: the last ones an attention group holds, one state of a Mamba group. */
    int[][] allocate(int promptBlocks)
    {
        int[][] ids = new int[model.groups().size()][];
        for (int g = 0; g < ids.length; g++) {
            ArrayDeque<Integer> free = states.get(g) == null ? tokenBlocks : states.get(g);
            ids[g] = new int[model.heldBlocks(g, promptBlocks, blockTokens)];
            for (int j = 0; j < ids[g].length; j++) {
                Integer block = free.poll();
                if (block == null) {
                    throw new IllegalStateException(states.get(g) == null ? "token block pool exhausted: " + promptBlocks + " prompt blocks do not fit in "
                            + tokenCapacity : "state pool of group " + g + " exhausted: all " + stateCapacity + " states are held by requests in flight");
                }
                ids[g][j] = block;
            }
            if (states.get(g) != null) {
                statesTaken += ids[g].length;
                statePeak[g] = Math.max(statePeak[g], stateCapacity - states.get(g).size());
            }
        }
        tokenPeak = Math.max(tokenPeak, tokenCapacity - tokenBlocks.size());
        return ids;
    }

    void release(int[][] ids)
    {
        for (int g = 0; g < ids.length; g++) {
            ArrayDeque<Integer> free = states.get(g) == null ? tokenBlocks : states.get(g);
            for (int block : ids[g]) {
                free.add(block);
            }
        }
    }

    /**
     * One line of a pool's {@link #audit}, for the demo's text output.
     *
     * @param audit what {@link #audit} returned.
     * @return e.g. {@code token blocks: 312 of 4097 held at most; states of group 1: 8 of 9 held at most, 40 taken}.
     */
    @SuppressWarnings("unchecked")
    public static String describe(Map<String, Object> audit)
    {
        Map<String, Object> tokens = (Map<String, Object>) audit.get("tokenBlocks");
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "token blocks: %,d of %,d held at most", tokens.get("peakHeld"), tokens.get("capacity")));
        Map<String, Object> states = (Map<String, Object>) audit.get("stateBlocks");
        if (states != null) {
            for (Map.Entry<String, Object> entry : states.entrySet()) {
                if (entry.getValue() instanceof Map<?, ?> group) {
                    line.append(String.format(Locale.ROOT, "; states of %s: %,d of %,d held at most", entry.getKey().replace("group", "group "),
                            group.get("peakHeld"), group.get("capacity")));
                }
            }
            line.append(String.format(Locale.ROOT, ", %,d taken", states.get("statesTaken")));
        }
        return line.toString();
    }

    /**
     * What the pool lent: token blocks (capacity, most held at once, free now) and, for a model
     * with Mamba groups, states per group likewise plus how many requests took one.
     */
    Map<String, Object> audit()
    {
        Map<String, Object> audit = new LinkedHashMap<>();
        audit.put("tokenBlocks", Map.of("capacity", tokenCapacity, "peakHeld", tokenPeak, "free", tokenBlocks.size()));
        Map<String, Object> stateGroups = new LinkedHashMap<>();
        for (int g = 0; g < states.size(); g++) {
            if (states.get(g) != null) {
                stateGroups.put("group" + g, Map.of("capacity", stateCapacity, "peakHeld", statePeak[g], "free", states.get(g).size()));
            }
        }
        if (!stateGroups.isEmpty()) {
            stateGroups.put("statesTaken", statesTaken);
            audit.put("stateBlocks", stateGroups);
        }
        return audit;
    }
}
