package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.Experimental;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The prefill engine's record of the conversations whose KV it keeps between turns, for the
 * two-way hand-off: at a turn's end the decoder hands the conversation's KV (prompt and generated
 * tokens) back with its own {@link ProducerConnector#prefillFinished}, and the prefill engine
 * receives with its {@link ConsumerConnector} only the blocks it lacks, then computes only the next
 * turn's new tokens. Both engines therefore run a producer and a consumer over one cache
 * ({@code kv_both}).
 *
 * <p>Blocks are positional: block {@code p} of a group holds the conversation's tokens
 * {@code [p × blockTokens, (p + 1) × blockTokens)}. The engine keeps the whole blocks below the
 * tokens it kept; a partial last kept block is lacking, since the decoder completed it. The
 * consumer connector end-trims the hand-back's list of each group to the lacking count, as for any
 * prefix-cache hit, so the lacking blocks receive the hand-back's last blocks.
 *
 * <pre>
 *   kept      tokens = 40, g0 = [3, 8, 5]               blockTokens = 16
 *             whole: [3, 8] (tokens 0..31); 5 holds 32..39 only
 *   hand-back tokens = 70, g0 = [21, 22, 23, 24, 25]   (decoder's ids)
 *   lacking   g0: 5 - 2 = 3 blocks, e.g. [5, 9, 11]     receive 23, 24, 25 into them
 * </pre>
 *
 * <p>A group whose rows are not positional (a recurrent state) keeps no block, so all its
 * hand-back blocks are lacking.
 *
 * <p><b>Threading.</b> Every method may be called from any thread. {@link #receive} checks under
 * the record's lock and calls the consumer outside it.
 */
@Experimental(eta = "2027-06-01")
public final class HandBacks
{
    private final int blockTokens;
    private final Map<String, Kept> sessions = new HashMap<>();

    /**
     * Creates an empty record.
     *
     * @param blockTokens tokens per (logical) block of the engine's cache.
     */
    public HandBacks(int blockTokens)
    {
        checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        this.blockTokens = blockTokens;
    }

    /** {@return tokens per block} */
    public int blockTokens()
    {
        return blockTokens;
    }

    /**
     * Records that the engine keeps a conversation's first tokens after a turn's prefill; replaces
     * an earlier record of the session. The engine must not free or reuse the blocks until it
     * {@link #forget}s the session (or replaces its record).
     *
     * @param sessionId the conversation's id in this engine; 1 to {@link RequestIds#MAX_LENGTH}
     *     characters with no control or format characters.
     * @param tokens the tokens kept, counted from the conversation's start.
     * @param blocks the positional blocks that hold them, per cache group; a group keeps none
     *     (its rows are not reusable) or at most the blocks the tokens fill.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} for a malformed session id,
     *     negative tokens, or a group with more blocks than the tokens fill.
     */
    public void keep(String sessionId, long tokens, BlockIds blocks)
    {
        checkSessionId(sessionId);
        requireNonNull(blocks, "blocks is null");
        checkArgument(tokens >= 0, "session %s keeps tokens=%d (expected: >= 0)", sessionId, tokens);
        long filled = ceilBlocks(tokens);
        for (int g = 0; g < blocks.groupCount(); g++) {
            checkArgument(blocks.size(g) <= filled, "session %s keeps %d blocks in group %d but its %d tokens fill only %d blocks of %d tokens"
                    + " (keep the blocks that hold the tokens, or none for a group whose rows are not reusable)", sessionId, blocks.size(g), g,
                    tokens, filled, blockTokens);
        }
        synchronized (sessions) {
            sessions.put(sessionId, new Kept(tokens, blocks));
        }
    }

    /**
     * Drops a session's record; the engine may free its blocks afterwards.
     *
     * @param sessionId the session.
     * @return whether a record was dropped.
     */
    public boolean forget(String sessionId)
    {
        requireNonNull(sessionId, "sessionId is null");
        synchronized (sessions) {
            return sessions.remove(sessionId) != null;
        }
    }

    /** {@return the number of sessions kept} */
    public int size()
    {
        synchronized (sessions) {
            return sessions.size();
        }
    }

    /**
     * Returns the tokens kept of a session.
     *
     * @param sessionId the session.
     * @return the tokens, or empty when the session is not kept.
     */
    public OptionalLong keptTokens(String sessionId)
    {
        requireNonNull(sessionId, "sessionId is null");
        Kept kept = kept(sessionId);
        return kept == null ? OptionalLong.empty() : OptionalLong.of(kept.tokens);
    }

    /**
     * Returns the blocks kept of a session, as given to {@link #keep}.
     *
     * @param sessionId the session.
     * @return the blocks, or empty when the session is not kept.
     */
    public Optional<BlockIds> keptBlocks(String sessionId)
    {
        requireNonNull(sessionId, "sessionId is null");
        Kept kept = kept(sessionId);
        return kept == null ? Optional.empty() : Optional.of(kept.blocks);
    }

    /**
     * Plans a hand-back: how many blocks of each group the engine lacks, which it allocates and
     * passes to {@link #receive}. A group lacks the hand-back's blocks minus the whole blocks kept.
     *
     * @param requestId the engine's id of the receive; see {@link RequestIds#problem}.
     * @param sessionId the conversation.
     * @param handBack the decoder's parameters, as its producer returned them.
     * @param handBackTokens the tokens the hand-back covers (prompt and generated).
     * @return one count per cache group.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT}, naming the request and the
     *     session, for a malformed request id, a session not kept, a hand-back for another number of
     *     groups, or one covering fewer tokens than kept or more than its blocks hold.
     */
    public int[] lacking(String requestId, String sessionId, TransferParams handBack, long handBackTokens)
    {
        requireNonNull(sessionId, "sessionId is null");
        checkRequestId(requestId, sessionId);
        requireNonNull(handBack, "handBack is null");
        Kept kept = kept(sessionId);
        checkArgument(kept != null, "hand-back %s names session %s, which this engine does not keep (keep it after the turn's prefill, or"
                + " receive the conversation whole as a new request)", requestId, sessionId);
        return plan(requestId, sessionId, kept, handBack, handBackTokens);
    }

    /**
     * Returns the conversation's whole block table once the lacking blocks are received: per group
     * the whole blocks kept, then the lacking ones; what the engine passes to {@link #keep} after the
     * next turn's prefill extended it.
     *
     * @param sessionId the conversation.
     * @param lacking the blocks given to {@link #receive}.
     * @return the blocks, positional from the conversation's start.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} for a session not kept or
     *     lacking blocks for another number of groups.
     */
    public BlockIds table(String sessionId, BlockIds lacking)
    {
        requireNonNull(sessionId, "sessionId is null");
        requireNonNull(lacking, "lacking is null");
        Kept kept = kept(sessionId);
        checkArgument(kept != null, "session %s is not kept by this engine", sessionId);
        checkArgument(lacking.groupCount() == kept.blocks.groupCount(), "session %s keeps %d groups but lacking blocks list %d",
                sessionId, kept.blocks.groupCount(), lacking.groupCount());
        int[][] table = new int[lacking.groupCount()][];
        for (int g = 0; g < table.length; g++) {
            int whole = whole(kept, g);
            table[g] = new int[whole + lacking.size(g)];
            for (int p = 0; p < whole; p++) {
                table[g][p] = kept.blocks.get(g, p);
            }
            for (int p = 0; p < lacking.size(g); p++) {
                table[g][whole + p] = lacking.get(g, p);
            }
        }
        return BlockIds.of(table);
    }

    /**
     * Checks a hand-back against the session's record and starts receiving it into the lacking
     * blocks with {@link ConsumerConnector#blocksAllocated}; nothing moves when a check fails.
     *
     * @param consumer the engine's consumer connector, over the cache the session's blocks are in.
     * @param requestId the engine's id of the receive; see {@link RequestIds#problem}.
     * @param sessionId the conversation.
     * @param handBack the decoder's parameters.
     * @param handBackTokens the tokens the hand-back covers.
     * @param mode who moves the bytes.
     * @param lacking the blocks the engine allocated, with the counts {@link #lacking} planned; it
     *     may reuse the partial last kept block among them.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} as {@link #lacking}, and for
     *     lacking blocks of another count per group than planned; then whatever
     *     {@code blocksAllocated} throws.
     */
    public void receive(ConsumerConnector consumer, String requestId, String sessionId, TransferParams handBack, long handBackTokens,
            TransferMode mode, BlockIds lacking)
    {
        requireNonNull(consumer, "consumer is null");
        requireNonNull(mode, "mode is null");
        requireNonNull(lacking, "lacking is null");
        int[] planned = lacking(requestId, sessionId, handBack, handBackTokens);
        checkArgument(lacking.groupCount() == planned.length, "hand-back %s of session %s: lacking blocks list %d groups but the hand-back has %d"
                + " (allocate the counts lacking() planned)", requestId, sessionId, lacking.groupCount(), planned.length);
        for (int g = 0; g < planned.length; g++) {
            checkArgument(lacking.size(g) == planned[g], "hand-back %s of session %s: group %d lists %d lacking blocks but %d are lacking"
                    + " (allocate the counts lacking() planned)", requestId, sessionId, g, lacking.size(g), planned[g]);
        }
        consumer.blocksAllocated(requestId, handBack, mode, lacking);
    }

    private int[] plan(String requestId, String sessionId, Kept kept, TransferParams handBack, long handBackTokens)
    {
        BlockIds remote = handBack.blockIds();
        checkArgument(remote.groupCount() == kept.blocks.groupCount(), "hand-back %s of session %s lists %d cache groups but the session keeps %d"
                + " (hand back from a decoder of the same model)", requestId, sessionId, remote.groupCount(), kept.blocks.groupCount());
        checkArgument(handBackTokens >= kept.tokens, "hand-back %s of session %s covers %d tokens, fewer than the %d kept (a hand-back covers"
                + " the whole conversation; forget the session if the decoder's history diverged)", requestId, sessionId, handBackTokens, kept.tokens);
        int[] lacking = new int[remote.groupCount()];
        for (int g = 0; g < lacking.length; g++) {
            int whole = whole(kept, g);
            if (kept.blocks.size(g) > 0) {
                long holds = (long) remote.size(g) * blockTokens;
                checkArgument(holds >= handBackTokens, "hand-back %s of session %s covers %d tokens but group %d lists %d blocks, which hold %d"
                        + " (pass the tokens the decoder's blocks hold)", requestId, sessionId, handBackTokens, g, remote.size(g), holds);
            }
            lacking[g] = remote.size(g) - whole;
        }
        return lacking;
    }

    /** Whole kept blocks of a group: those whose tokens are all kept. */
    private int whole(Kept kept, int group)
    {
        return (int) Math.min(kept.blocks.size(group), kept.tokens / blockTokens);
    }

    private long ceilBlocks(long tokens)
    {
        return (tokens + blockTokens - 1) / blockTokens;
    }

    private Kept kept(String sessionId)
    {
        synchronized (sessions) {
            return sessions.get(sessionId);
        }
    }

    private static void checkRequestId(String requestId, String sessionId)
    {
        String problem = RequestIds.problem(requestId);
        checkArgument(problem == null, "hand-back of session %s refused: %s (pass the engine's id of the receive)", sessionId, problem);
    }

    private static void checkSessionId(String sessionId)
    {
        requireNonNull(sessionId, "sessionId is null");
        checkArgument(!sessionId.isEmpty() && sessionId.length() <= RequestIds.MAX_LENGTH, "session id of %d characters (expected: 1 to %d)",
                sessionId.length(), RequestIds.MAX_LENGTH);
        String problem = TransferParams.idProblem(sessionId, false);
        checkArgument(problem == null, "session id %s", problem);
    }

    private record Kept(long tokens, BlockIds blocks)
    {
    }
}
