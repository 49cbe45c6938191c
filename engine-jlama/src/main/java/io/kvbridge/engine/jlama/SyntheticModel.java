package io.kvbridge.engine.jlama;

import java.util.Locale;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * The shape of a model written with seeded random weights, so that a run needs no download: Jlama
 * loads it through its normal loading code like any checkpoint.
 *
 * @param architecture Jlama's {@code model_type}: {@code llama} or {@code qwen2} (which adds
 *     query, key and value biases).
 * @param layers transformer layers.
 * @param heads query heads.
 * @param kvHeads key and value heads; fewer than {@code heads} makes grouped-query attention.
 * @param hidden embedding width; a multiple of {@code heads}.
 * @param intermediate feed-forward width.
 * @param vocabulary tokens in the vocabulary; at least 259 (3 special tokens and 256 bytes).
 * @param contextLength the longest sequence, which also sets how Jlama pages the cache.
 * @param seed the weights' seed.
 */
public record SyntheticModel(
        String architecture,
        int layers,
        int heads,
        int kvHeads,
        int hidden,
        int intermediate,
        int vocabulary,
        int contextLength,
        long seed)
{
    /** Token id of the beginning-of-sequence token. */
    public static final int BOS = 1;
    /** Token id of the end-of-sequence token. */
    public static final int EOS = 2;
    /** Ids below this are special tokens (unknown, begin, end); prompts use the ids above. */
    public static final int FIRST_ORDINARY_TOKEN = 3;

    /** Validates the shape. */
    public SyntheticModel
    {
        checkArgument("llama".equals(architecture) || "qwen2".equals(architecture),
                "architecture=%s is not supported (expected: llama or qwen2)", architecture);
        checkArgument(layers > 0 && heads > 0 && kvHeads > 0 && intermediate > 0, "layers=%d heads=%d kvHeads=%d intermediate=%d must be positive",
                layers, heads, kvHeads, intermediate);
        checkArgument(heads % kvHeads == 0, "heads=%d is not a multiple of kvHeads=%d", heads, kvHeads);
        checkArgument(hidden > 0 && hidden % heads == 0, "hidden=%d is not a positive multiple of heads=%d", hidden, heads);
        checkArgument(vocabulary >= FIRST_ORDINARY_TOKEN + 256, "vocabulary=%d is below %d (3 special tokens and 256 bytes)", vocabulary,
                FIRST_ORDINARY_TOKEN + 256);
        checkArgument(contextLength > 1, "contextLength=%d must exceed 1", contextLength);
    }

    /**
     * The grouped-query Llama shape: 8 layers, 8 query heads over 2 KV heads, hidden 256, vocabulary
     * 512. Its 4096-token context makes Jlama split each session's cache into two context pages.
     *
     * @param seed the weights' seed.
     * @return the shape.
     */
    public static SyntheticModel llamaGqa(long seed)
    {
        return new SyntheticModel("llama", 8, 8, 2, 256, 512, 512, 4096, seed);
    }

    /**
     * A Qwen2 shape whose KV rows are twice as wide (4 KV heads of 32): Jlama pages it 4 layers by
     * 2048 tokens, so its 6 layers take two layer pages, the second half used.
     *
     * @param seed the weights' seed.
     * @return the shape.
     */
    public static SyntheticModel qwen2(long seed)
    {
        return new SyntheticModel("qwen2", 6, 12, 4, 384, 768, 512, 4096, seed);
    }

    /**
     * Returns a preset by name.
     *
     * @param name {@code llama} or {@code qwen2}.
     * @param seed the weights' seed.
     * @return the shape.
     */
    public static SyntheticModel named(String name, long seed)
    {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "llama" -> llamaGqa(seed);
            case "qwen2" -> qwen2(seed);
            default -> throw new io.kvbridge.spi.KvBridgeException(io.kvbridge.spi.ErrorCode.INVALID_ARGUMENT,
                    "model shape " + name + " is unknown (expected: llama or qwen2)");
        };
    }

    /**
     * Returns this shape with another context length: the longest sequence, which also sets the
     * page grid Jlama cuts each session's cache into ({@link JlamaPageGeometry}).
     *
     * @param positions the context length.
     * @return the shape.
     */
    public SyntheticModel withContextLength(int positions)
    {
        return new SyntheticModel(architecture, layers, heads, kvHeads, hidden, intermediate, vocabulary, positions, seed);
    }

    /**
     * Returns the width of one head.
     *
     * @return {@code hidden / heads}.
     */
    public int headSize()
    {
        return hidden / heads;
    }

    /**
     * Returns the elements of one token's key (or value) row in one layer.
     *
     * @return {@code kvHeads * headSize}.
     */
    public int kvLength()
    {
        return kvHeads * headSize();
    }
}
