package io.kvbridge.engine.jlama.serve;

/**
 * A session whose blocks kvbridge is moving into a decoder slot.
 *
 * @param id the request.
 * @param slot the decoder's session slot.
 * @param promptLength the prompt's tokens, the position decoding starts at.
 * @param steps decode steps.
 * @param token the first token, which prefill sampled; {@link #UNKNOWN} while a streamed prefill
 *     still runs (it comes with a {@code first-token} command).
 * @param startNanos when {@code blocksAllocated} was called.
 * @param conversation the conversation whose later turns may reuse the slot, or null.
 * @param prompt a conversation turn's prompt, or null.
 * @param cachedTokens prompt tokens the slot already held.
 */
record Receiving(String id, int slot, int promptLength, int steps, int token, long startNanos, String conversation, int[] prompt, int cachedTokens)
{
    /** The first token of a session whose prefill has not finished. */
    static final int UNKNOWN = -1;

    /**
     * Returns this session with its first token known.
     *
     * @param first the token prefill sampled.
     * @return the session.
     */
    Receiving withToken(int first)
    {
        return new Receiving(id, slot, promptLength, steps, first, startNanos, conversation, prompt, cachedTokens);
    }
}
