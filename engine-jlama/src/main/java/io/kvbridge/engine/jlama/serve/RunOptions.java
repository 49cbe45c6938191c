package io.kvbridge.engine.jlama.serve;

import io.kvbridge.spi.KvBridgeException;

import java.util.Locale;

/**
 * What a disaggregated run does.
 *
 * @param backend kvbridge transport between the engines ({@code tcp}, {@code ucx}).
 * @param mode {@code push}, {@code pull} or {@code mixed} (alternating by session).
 * @param sessions sessions to serve.
 * @param promptMin shortest prompt in tokens.
 * @param promptMax longest prompt in tokens.
 * @param decodeTokens decode steps after the first token.
 * @param seed seeds the model's weights and the prompts.
 * @param model {@code llama} or {@code qwen2}.
 * @param blockTokens tokens per kvbridge block.
 * @param corruptBlock negative control: the block of layer 0's key plane the prefill JVM changes
 *     one byte of before each transfer; -1 for none.
 */
public record RunOptions(String backend, String mode, int sessions, int promptMin, int promptMax, int decodeTokens, long seed, String model,
        int blockTokens, int corruptBlock)
{
    /** Validates the values. */
    public RunOptions
    {
        KvBridgeException.checkArgument(mode.equals("push") || mode.equals("pull") || mode.equals("mixed"), "mode=%s (expected: push, pull or mixed)",
                mode);
        KvBridgeException.checkArgument(sessions > 0, "sessions=%d is not positive", sessions);
        KvBridgeException.checkArgument(promptMin > 1 && promptMax >= promptMin, "prompt tokens %d..%d (expected: 2 <= A <= B)", promptMin, promptMax);
        KvBridgeException.checkArgument(decodeTokens > 0, "decode tokens=%d is not positive", decodeTokens);
        KvBridgeException.checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
    }

    /**
     * Returns the transfer mode of a session.
     *
     * @param session its index.
     * @return {@code PUSH} or {@code PULL}.
     */
    public String modeOf(int session)
    {
        String chosen = mode.equals("mixed") ? (session % 2 == 0 ? "push" : "pull") : mode;
        return chosen.toUpperCase(Locale.ROOT);
    }
}
