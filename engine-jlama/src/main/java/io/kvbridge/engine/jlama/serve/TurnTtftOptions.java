package io.kvbridge.engine.jlama.serve;

import io.kvbridge.spi.KvBridgeException;

import java.util.List;

/**
 * What the multi-turn time-to-first-token benchmark measures.
 *
 * @param backend kvbridge transport between the engines.
 * @param mode {@code push} or {@code pull}, both ways.
 * @param model {@code llama} or {@code qwen2}, written with an {@link #CONTEXT}-token context so that a 4096-token history fits.
 * @param histories the first turn's conversation lengths to time, in tokens (the tokens handed back).
 * @param repetitions timed pairs per history; the report gives their median.
 * @param warmups untimed rounds over every history first.
 * @param bitIdentical whether the engine JVMs run with {@link EngineProcess#JVM_OPTIONS} or {@link EngineProcess#FAST_JVM_OPTIONS}.
 * @param seed seeds the weights and the prompts.
 * @param blockTokens tokens per kvbridge block.
 */
public record TurnTtftOptions(String backend, String mode, String model, List<Integer> histories, int repetitions, int warmups, boolean bitIdentical,
        long seed, int blockTokens)
{
    /** The benchmark model's context: room for a 4096-token history, the new turn and its decode step. */
    public static final int CONTEXT = 8192;

    /** New tokens the second turn adds after the first turn's output. */
    public static final int NEW_TOKENS = 64;

    /** Validates the values. */
    public TurnTtftOptions
    {
        histories = List.copyOf(histories);
        KvBridgeException.checkArgument(mode.equals("push") || mode.equals("pull"), "mode=%s (expected: push or pull)", mode);
        KvBridgeException.checkArgument(!histories.isEmpty() && histories.stream().allMatch(n -> n >= 2 && n + NEW_TOKENS + 2 <= CONTEXT),
                "histories %s (expected: one or more, each in [2, %d])", histories, CONTEXT - NEW_TOKENS - 2);
        KvBridgeException.checkArgument(repetitions >= 1, "repetitions=%d is not positive", repetitions);
        KvBridgeException.checkArgument(warmups >= 0, "warmups=%d is negative", warmups);
        KvBridgeException.checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
    }
}
