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
 */
public record SessionResult(String id, String mode, int promptTokens, List<Integer> tokens, List<Integer> referenceTokens, List<Integer> mismatchedSteps,
        long prefillNanos, long transferNanos, long firstStepNanos, long bytesMoved, long decoderForwardedTokens, String error, int cachedTokens,
        long decodeReadyNanos)
{
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
