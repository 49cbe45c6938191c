package io.kvbridge.engine.jlama.serve;

import io.kvbridge.spi.KvBridgeException;

import java.util.List;

/**
 * What the time-to-first-token benchmark measures.
 *
 * @param backend kvbridge transport between the engines.
 * @param mode {@code push} or {@code pull}.
 * @param model {@code llama} or {@code qwen2}.
 * @param promptLengths the prompt lengths to time, in tokens.
 * @param repetitions timed pairs per length; the report gives their median.
 * @param warmups untimed rounds over every length first, so that the JIT compiled what the timed rounds run.
 * @param bitIdentical whether the engine JVMs run with {@link EngineProcess#JVM_OPTIONS} (same bits
 *     in every JVM) or {@link EngineProcess#FAST_JVM_OPTIONS}.
 * @param seed seeds the weights and the prompts.
 * @param blockTokens tokens per kvbridge block.
 */
public record TtftOptions(String backend, String mode, String model, List<Integer> promptLengths, int repetitions, int warmups, boolean bitIdentical,
        long seed, int blockTokens)
{
    /** Validates the values. */
    public TtftOptions
    {
        promptLengths = List.copyOf(promptLengths);
        KvBridgeException.checkArgument(mode.equals("push") || mode.equals("pull"), "mode=%s (expected: push or pull)", mode);
        KvBridgeException.checkArgument(!promptLengths.isEmpty() && promptLengths.stream().allMatch(n -> n >= 2 && n < 4096),
                "prompt lengths %s (expected: one or more, each in [2, 4095])", promptLengths);
        KvBridgeException.checkArgument(repetitions >= 1, "repetitions=%d is not positive", repetitions);
        KvBridgeException.checkArgument(warmups >= 0, "warmups=%d is negative", warmups);
        KvBridgeException.checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
    }
}
