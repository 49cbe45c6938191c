package io.kvbridge.engine.jlama.serve;

import io.kvbridge.spi.KvBridgeException;

import java.util.Collections;
import java.util.List;

/**
 * What the streamed-against-whole benchmark measures ({@link StreamedTtftBenchmark}).
 *
 * @param backend kvbridge transport between the engines.
 * @param mode {@code push} or {@code pull}.
 * @param model {@code llama} or {@code qwen2}.
 * @param promptLengths the prompt lengths to time, in tokens.
 * @param repetitions timed pairs per length; the report gives their median.
 * @param warmups untimed rounds first, so that the JIT compiled what the timed rounds run; they run the
 *     lengths up to 1024 tokens only, as the code is the same at every length.
 * @param bitIdentical whether the engine JVMs run with {@link EngineProcess#JVM_OPTIONS} (same bits
 *     in every JVM) or {@link EngineProcess#FAST_JVM_OPTIONS}.
 * @param seed seeds the weights and the prompts.
 * @param blockTokens tokens per kvbridge block.
 * @param chunkTokens the prompt chunk Jlama's {@code batchForward} runs through every layer at a time
 *     ({@code jlama.max_batch_size}), the same in both JVMs; 0 for Jlama's default
 *     ({@link #JLAMA_DEFAULT_CHUNK}).
 */
public record StreamedTtftOptions(String backend, String mode, String model, List<Integer> promptLengths, int repetitions, int warmups,
        boolean bitIdentical, long seed, int blockTokens, int chunkTokens)
{
    /** Jlama's prompt chunk when {@code jlama.max_batch_size} is not set. */
    public static final int JLAMA_DEFAULT_CHUNK = 256;

    /** The longest prompt: the generated model's context grows with the prompts, its pages with it. */
    public static final int MAX_PROMPT = 16_384;

    /** The generated models' own context, kept for prompts that fit it. */
    private static final int BASE_CONTEXT = 4096;

    /** Validates the values. */
    public StreamedTtftOptions
    {
        promptLengths = List.copyOf(promptLengths);
        KvBridgeException.checkArgument(mode.equals("push") || mode.equals("pull"), "mode=%s (expected: push or pull)", mode);
        KvBridgeException.checkArgument(!promptLengths.isEmpty() && promptLengths.stream().allMatch(n -> n >= 2 && n <= MAX_PROMPT),
                "prompt lengths %s (expected: one or more, each in [2, %d])", promptLengths, MAX_PROMPT);
        KvBridgeException.checkArgument(repetitions >= 1, "repetitions=%d is not positive", repetitions);
        KvBridgeException.checkArgument(warmups >= 0, "warmups=%d is negative", warmups);
        KvBridgeException.checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        KvBridgeException.checkArgument(chunkTokens >= 0, "chunkTokens=%d is negative (0 keeps Jlama's %d)", chunkTokens, JLAMA_DEFAULT_CHUNK);
    }

    /**
     * Returns the context the generated model is written with: its own 4096 positions, or, for a
     * longer prompt and its decode step, the next multiple of 4096 that holds them.
     *
     * @return the context length.
     */
    public int contextLength()
    {
        int needed = Collections.max(promptLengths) + 2;
        return Math.max(BASE_CONTEXT, (needed + BASE_CONTEXT - 1) / BASE_CONTEXT * BASE_CONTEXT);
    }

    /**
     * Returns the prompt chunk in effect.
     *
     * @return {@link #chunkTokens()}, or Jlama's default when 0.
     */
    public int effectiveChunk()
    {
        return chunkTokens == 0 ? JLAMA_DEFAULT_CHUNK : chunkTokens;
    }
}
