package io.kvbridge.engine.jlama.serve;

import io.kvbridge.spi.KvBridgeException;

import java.nio.file.Path;
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
 * @param concurrency sessions in flight at once; both engines get at least this many slots.
 * @param turns turns per session: each later turn's prompt is the earlier turn's prompt, its
 *     generated tokens and {@link #FOLLOW_UP_MIN}..{@link #FOLLOW_UP_MAX} new tokens, and the decoder
 *     keeps the session's slot between turns, receiving only the blocks it does not hold.
 * @param modelDirectory an existing Jlama model directory every engine loads; null to write the
 *     generated {@code model} shape instead.
 * @param producerPp prefill JVMs, one per pipeline stage, each registering and handing over only its
 *     stage's layers to the one decoder that holds them all; 1 for one prefill JVM.
 * @param streamLayers hand each request to the decoder when its prefill starts and move each layer as
 *     Jlama's forward pass completes it ({@code prefillStarted}, {@code layerComputed}): pushed by the
 *     prefill JVM, or pulled by the decoder as each layer is announced.
 * @param handBack at each turn's end but the last the decoder hands the conversation's KV back to the prefill JVM, which keeps
 *     the session's slot, receives the blocks it lacks and computes only the next turn's new tokens; off recomputes the
 *     whole conversation each turn. One prefill JVM only; streamed or whole.
 * @param corruptHandBack negative control: the decoder changes one byte of the last handed-back row's key (layer 0) before
 *     each hand-back.
 */
public record RunOptions(String backend, String mode, int sessions, int promptMin, int promptMax, int decodeTokens, long seed, String model,
        int blockTokens, int corruptBlock, int concurrency, int turns, Path modelDirectory, int producerPp, boolean streamLayers, boolean handBack,
        boolean corruptHandBack)
{
    /**
     * Options whose hand-back between turns is on wherever it applies: several turns, one prefill JVM.
     *
     * @param backend kvbridge transport.
     * @param mode {@code push}, {@code pull} or {@code mixed}.
     * @param sessions sessions to serve.
     * @param promptMin shortest prompt.
     * @param promptMax longest prompt.
     * @param decodeTokens decode steps.
     * @param seed seed.
     * @param model shape.
     * @param blockTokens tokens per block.
     * @param corruptBlock negative control block, or -1.
     * @param concurrency sessions in flight.
     * @param turns turns per session.
     * @param modelDirectory an existing model directory, or null.
     * @param producerPp prefill JVMs, one per pipeline stage.
     * @param streamLayers whether prefill streams its layers.
     */
    public RunOptions(String backend, String mode, int sessions, int promptMin, int promptMax, int decodeTokens, long seed, String model,
            int blockTokens, int corruptBlock, int concurrency, int turns, Path modelDirectory, int producerPp, boolean streamLayers)
    {
        this(backend, mode, sessions, promptMin, promptMax, decodeTokens, seed, model, blockTokens, corruptBlock, concurrency, turns, modelDirectory,
                producerPp, streamLayers, turns > 1 && producerPp == 1, false);
    }

    /**
     * Returns these options with the hand-back between turns on or off.
     *
     * @param on whether the decoder hands each conversation's KV back between turns.
     * @return the options.
     */
    public RunOptions withHandBack(boolean on)
    {
        return new RunOptions(backend, mode, sessions, promptMin, promptMax, decodeTokens, seed, model, blockTokens, corruptBlock, concurrency, turns,
                modelDirectory, producerPp, streamLayers, on, false);
    }

    /**
     * Returns these options with the hand-back's negative control: the decoder changes one byte of
     * each hand-back's last row before it moves.
     *
     * @return the options.
     */
    public RunOptions withCorruptedHandBack()
    {
        return new RunOptions(backend, mode, sessions, promptMin, promptMax, decodeTokens, seed, model, blockTokens, corruptBlock, concurrency, turns,
                modelDirectory, producerPp, streamLayers, true, true);
    }

    /** The most producer pipeline stages: each is a JVM holding the whole model. */
    public static final int MAX_PRODUCER_PP = 4;

    /** Fewest new tokens a later turn adds. */
    public static final int FOLLOW_UP_MIN = 8;

    /** Most new tokens a later turn adds. */
    public static final int FOLLOW_UP_MAX = 64;

    /** Sessions in flight when not given. */
    public static final int DEFAULT_CONCURRENCY = 8;

    /** The most sessions in flight: each takes a slot of pages (16 to 32 MiB) in both engines. */
    public static final int MAX_CONCURRENCY = 64;

    /**
     * Options with {@link #DEFAULT_CONCURRENCY} sessions in flight.
     *
     * @param backend kvbridge transport.
     * @param mode {@code push}, {@code pull} or {@code mixed}.
     * @param sessions sessions to serve.
     * @param promptMin shortest prompt.
     * @param promptMax longest prompt.
     * @param decodeTokens decode steps.
     * @param seed seed.
     * @param model shape.
     * @param blockTokens tokens per block.
     * @param corruptBlock negative control block, or -1.
     */
    public RunOptions(String backend, String mode, int sessions, int promptMin, int promptMax, int decodeTokens, long seed, String model,
            int blockTokens, int corruptBlock)
    {
        this(backend, mode, sessions, promptMin, promptMax, decodeTokens, seed, model, blockTokens, corruptBlock, DEFAULT_CONCURRENCY, 1);
    }

    /**
     * Options over the generated {@code model} shape.
     *
     * @param backend kvbridge transport.
     * @param mode {@code push}, {@code pull} or {@code mixed}.
     * @param sessions sessions to serve.
     * @param promptMin shortest prompt.
     * @param promptMax longest prompt.
     * @param decodeTokens decode steps.
     * @param seed seed.
     * @param model shape.
     * @param blockTokens tokens per block.
     * @param corruptBlock negative control block, or -1.
     * @param concurrency sessions in flight.
     * @param turns turns per session.
     */
    public RunOptions(String backend, String mode, int sessions, int promptMin, int promptMax, int decodeTokens, long seed, String model,
            int blockTokens, int corruptBlock, int concurrency, int turns)
    {
        this(backend, mode, sessions, promptMin, promptMax, decodeTokens, seed, model, blockTokens, corruptBlock, concurrency, turns, null);
    }

    /**
     * Options with one prefill JVM.
     *
     * @param backend kvbridge transport.
     * @param mode {@code push}, {@code pull} or {@code mixed}.
     * @param sessions sessions to serve.
     * @param promptMin shortest prompt.
     * @param promptMax longest prompt.
     * @param decodeTokens decode steps.
     * @param seed seed.
     * @param model shape.
     * @param blockTokens tokens per block.
     * @param corruptBlock negative control block, or -1.
     * @param concurrency sessions in flight.
     * @param turns turns per session.
     * @param modelDirectory an existing model directory, or null.
     */
    public RunOptions(String backend, String mode, int sessions, int promptMin, int promptMax, int decodeTokens, long seed, String model,
            int blockTokens, int corruptBlock, int concurrency, int turns, Path modelDirectory)
    {
        this(backend, mode, sessions, promptMin, promptMax, decodeTokens, seed, model, blockTokens, corruptBlock, concurrency, turns, modelDirectory, 1);
    }

    /**
     * Options whose prefill hands over once it finished.
     *
     * @param backend kvbridge transport.
     * @param mode {@code push}, {@code pull} or {@code mixed}.
     * @param sessions sessions to serve.
     * @param promptMin shortest prompt.
     * @param promptMax longest prompt.
     * @param decodeTokens decode steps.
     * @param seed seed.
     * @param model shape.
     * @param blockTokens tokens per block.
     * @param corruptBlock negative control block, or -1.
     * @param concurrency sessions in flight.
     * @param turns turns per session.
     * @param modelDirectory an existing model directory, or null.
     * @param producerPp prefill JVMs, one per pipeline stage.
     */
    public RunOptions(String backend, String mode, int sessions, int promptMin, int promptMax, int decodeTokens, long seed, String model,
            int blockTokens, int corruptBlock, int concurrency, int turns, Path modelDirectory, int producerPp)
    {
        this(backend, mode, sessions, promptMin, promptMax, decodeTokens, seed, model, blockTokens, corruptBlock, concurrency, turns, modelDirectory,
                producerPp, false);
    }

    /**
     * Returns these options with the streamed hand-off on or off.
     *
     * @param stream whether prefill streams its layers.
     * @return the options.
     */
    public RunOptions withStreamLayers(boolean stream)
    {
        return new RunOptions(backend, mode, sessions, promptMin, promptMax, decodeTokens, seed, model, blockTokens, corruptBlock, concurrency, turns,
                modelDirectory, producerPp, stream);
    }

    /** Validates the values. */
    public RunOptions
    {
        KvBridgeException.checkArgument(mode.equals("push") || mode.equals("pull") || mode.equals("mixed"), "mode=%s (expected: push, pull or mixed)",
                mode);
        KvBridgeException.checkArgument(sessions > 0, "sessions=%d is not positive", sessions);
        KvBridgeException.checkArgument(promptMin > 1 && promptMax >= promptMin, "prompt tokens %d..%d (expected: 2 <= A <= B)", promptMin, promptMax);
        KvBridgeException.checkArgument(decodeTokens > 0, "decode tokens=%d is not positive", decodeTokens);
        KvBridgeException.checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        KvBridgeException.checkArgument(turns >= 1, "turns=%d is not positive", turns);
        KvBridgeException.checkArgument(producerPp >= 1 && producerPp <= MAX_PRODUCER_PP, "producerPp=%d is outside [1, %d]", producerPp,
                MAX_PRODUCER_PP);
        KvBridgeException.checkArgument(!handBack || producerPp == 1,
                "hand-back with producerPp=%d: the hand-back lands in one prefill JVM that keeps the conversation and computes its new tokens "
                        + "through every layer, and a pipeline stage holds only its own layers; give --producer-pp 1 or --hand-back off", producerPp);
        KvBridgeException.checkArgument(!corruptHandBack || handBack, "corruptHandBack without handBack: nothing is handed back to change");
        KvBridgeException.checkArgument(concurrency >= 1 && concurrency <= MAX_CONCURRENCY, "concurrency=%d is outside [1, %d]", concurrency,
                MAX_CONCURRENCY);
    }

    /**
     * Returns the most positions a session's last turn needs: every turn's prompt growth, generated tokens and decode steps.
     *
     * @return the positions.
     */
    public int maxPositions()
    {
        return promptMax + turns * (decodeTokens + 1) + (turns - 1) * FOLLOW_UP_MAX;
    }

    /**
     * Returns what the audit names as the model: the generated shape, or the directory given.
     *
     * @return {@code model} or the model directory's path.
     */
    public String modelLabel()
    {
        return modelDirectory == null ? model : modelDirectory.toString();
    }

    /**
     * Returns the session slots each engine gets: one per session in flight, and at least 2.
     *
     * @return the slots.
     */
    public int slots()
    {
        return Math.max(2, concurrency);
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
