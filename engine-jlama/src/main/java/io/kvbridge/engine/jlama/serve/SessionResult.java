package io.kvbridge.engine.jlama.serve;

import java.util.List;

/**
 * One session of a disaggregated run next to its single-JVM reference.
 *
 * @param id the request id.
 * @param mode {@code PUSH} or {@code PULL}.
 * @param promptTokens prompt length.
 * @param tokens tokens the prefill and decode JVMs generated, the first from prefill.
 * @param referenceTokens tokens the reference JVM generated.
 * @param mismatchedSteps steps whose token or logits bits differ from the reference.
 * @param prefillNanos the prompt's forward pass in the prefill JVM.
 * @param transferNanos from {@code blocksAllocated} until the decoder saw the blocks arrive.
 * @param firstStepNanos the decoder's first decode step.
 * @param bytesMoved KV bytes of the prompt's blocks.
 * @param decoderForwardedTokens tokens the decoder ran through the model for this session.
 * @param error the refusal or failure, or null.
 * @param cachedTokens prompt tokens the decoder already held from the session's earlier turn, which
 *     kvbridge did not move (a prefix hit); 0 for a first turn.
 * @param decodeReadyNanos from the router sending the prompt to prefill until the decoder had every
 *     block (wall clock, read in both JVMs, microsecond grain); 0 for a failed session.
 * @param handedBackTokens the tokens the decoder handed back before this turn's prefill, which computed only those after
 *     them; 0 when it computed the whole prompt.
 * @param handBackBytes KV bytes of the blocks the prefill JVM received back (those it lacked); 0 without a hand-back.
 */
public record SessionResult(String id, String mode, int promptTokens, List<Integer> tokens, List<Integer> referenceTokens, List<Integer> mismatchedSteps,
        long prefillNanos, long transferNanos, long firstStepNanos, long bytesMoved, long decoderForwardedTokens, String error, int cachedTokens,
        long decodeReadyNanos, int handedBackTokens, long handBackBytes)
{
    /**
     * A session without a hand-back.
     *
     * @param id the request id.
     * @param mode {@code PUSH} or {@code PULL}.
     * @param promptTokens prompt length.
     * @param tokens generated tokens.
     * @param referenceTokens the reference's tokens.
     * @param mismatchedSteps differing steps.
     * @param prefillNanos prefill time.
     * @param transferNanos transfer time.
     * @param firstStepNanos first decode step.
     * @param bytesMoved KV bytes moved.
     * @param decoderForwardedTokens the decoder's forwarded tokens.
     * @param error the failure, or null.
     * @param cachedTokens tokens the decoder held.
     * @param decodeReadyNanos prefill start to decode-ready.
     */
    public SessionResult(String id, String mode, int promptTokens, List<Integer> tokens, List<Integer> referenceTokens, List<Integer> mismatchedSteps,
            long prefillNanos, long transferNanos, long firstStepNanos, long bytesMoved, long decoderForwardedTokens, String error, int cachedTokens,
            long decodeReadyNanos)
    {
        this(id, mode, promptTokens, tokens, referenceTokens, mismatchedSteps, prefillNanos, transferNanos, firstStepNanos, bytesMoved,
                decoderForwardedTokens, error, cachedTokens, decodeReadyNanos, 0, 0);
    }

    /**
     * Returns this session with its turn's hand-back.
     *
     * @param handedBack tokens handed back, from which the prefill computed.
     * @param bytes KV bytes received back.
     * @return the session.
     */
    public SessionResult withHandBack(int handedBack, long bytes)
    {
        return new SessionResult(id, mode, promptTokens, tokens, referenceTokens, mismatchedSteps, prefillNanos, transferNanos, firstStepNanos,
                bytesMoved, decoderForwardedTokens, error, cachedTokens, decodeReadyNanos, handedBack, bytes);
    }

    /**
     * Tells whether the session matched its reference bit for bit and the decoder ran only its steps.
     *
     * @param decodeSteps the decode steps asked for.
     * @return true when identical.
     */
    public boolean identical(int decodeSteps)
    {
        return error == null && mismatchedSteps.isEmpty() && tokens.equals(referenceTokens) && decoderForwardedTokens == decodeSteps;
    }
}
