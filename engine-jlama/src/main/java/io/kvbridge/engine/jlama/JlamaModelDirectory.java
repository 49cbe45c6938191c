package io.kvbridge.engine.jlama;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tjake.jlama.model.ModelSupport.ModelType;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.util.JsonSupport;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What a Jlama model directory tells before any engine loads it: the shape the cache layout and the
 * prompts need, read from the directory's {@code config.json} through Jlama's own config classes and
 * from its {@code tokenizer.json}, and the page split Jlama will choose for it. {@link #inspect}
 * refuses, in one line naming the value and the fix, a directory the engines could not serve.
 *
 * @param directory the model directory.
 * @param architecture Jlama's {@code model_type}, lower case.
 * @param layers transformer layers.
 * @param kvHeads key and value heads.
 * @param headSize width of one head.
 * @param contextLength the model's context ({@code max_position_embeddings}).
 * @param vocabulary token ids a prompt may use: those both the model's embedding and the tokenizer hold.
 * @param bosToken the begin-of-sequence token every prompt starts with.
 * @param paging how Jlama pages a session of this model in F32 working memory.
 */
public record JlamaModelDirectory(Path directory, String architecture, int layers, int kvHeads, int headSize, int contextLength, int vocabulary,
        int bosToken, JlamaPageGeometry paging)
{
    /** Weight dtypes Jlama reads into F32 working memory. */
    private static final Set<String> WEIGHT_DTYPES = Set.of("float32", "bfloat16", "float16");

    /** Jlama's model types that generate text; BERT is an encoder with no decode step. */
    private static final Set<ModelType> GENERATIVE = Arrays.stream(ModelType.values()).filter(t -> t != ModelType.BERT)
            .collect(Collectors.toUnmodifiableSet());

    /** Below this many ids a prompt could not be drawn from ordinary tokens. */
    private static final int MIN_VOCABULARY = SyntheticModel.FIRST_ORDINARY_TOKEN + 2;

    /**
     * Reads a model directory and checks that the engines can serve it with blocks of
     * {@code blockTokens} tokens.
     *
     * @param directory holds {@code config.json}, safetensors weights and {@code tokenizer.json}.
     * @param blockTokens tokens per kvbridge block; must tile Jlama's context pages.
     * @return what the directory holds.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} naming what is missing or unsupported.
     */
    public static JlamaModelDirectory inspect(Path directory, int blockTokens)
    {
        refuseUnless(Files.isDirectory(directory), "model directory %s does not exist or is not a directory; give a Jlama model directory "
                + "(config.json, safetensors weights, tokenizer.json)", directory);
        Path configFile = directory.resolve("config.json");
        refuseUnless(Files.isRegularFile(configFile), "model directory %s has no config.json; give the directory a Jlama model was downloaded to",
                directory);
        refuseUnless(Files.isRegularFile(directory.resolve("model.safetensors")) || Files.isRegularFile(directory.resolve("model.safetensors.index.json")),
                "model directory %s has neither model.safetensors nor model.safetensors.index.json; Jlama loads safetensors weights only", directory);
        Path tokenizerFile = directory.resolve("tokenizer.json");
        refuseUnless(Files.isRegularFile(tokenizerFile), "model directory %s has no tokenizer.json; prompts are drawn from the tokenizer's vocabulary",
                directory);
        JsonNode configJson = readTree(configFile);
        String modelType = configJson.path("model_type").asText("");
        ModelType type = modelType(configFile, modelType);
        String dtype = configJson.path("torch_dtype").asText("float32");
        refuseUnless(WEIGHT_DTYPES.contains(dtype), "%s: torch_dtype=%s is not one this engine takes (expected one of float32, bfloat16, float16; "
                + "the engines compute in F32 working memory, which the logits read-out assumes)", configFile, dtype);
        Config config;
        try {
            config = JsonSupport.om.readValue(configFile.toFile(), type.configClass);
        }
        catch (IOException | RuntimeException e) {
            throw refusal("%s cannot be read as a %s config: %s; fix the file or download the model again", configFile, modelType,
                    oneLine(e.getMessage()));
        }
        int tokenizerVocabulary = tokenizerVocabulary(tokenizerFile);
        int vocabulary = Math.min(config.vocabularySize, tokenizerVocabulary);
        refuseUnless(vocabulary >= MIN_VOCABULARY, "%s: vocab_size=%d and the tokenizer's %d ids leave %d ids, fewer than %d; give a model with a real vocabulary",
                directory, config.vocabularySize, tokenizerVocabulary, vocabulary, MIN_VOCABULARY);
        refuseUnless(config.bosToken >= 0 && config.bosToken < vocabulary, "%s: bos_token_id=%d is outside the %d ids the model and its tokenizer share; "
                + "fix bos_token_id in config.json", configFile, config.bosToken, vocabulary);
        JlamaPageGeometry paging = JlamaPageGeometry.compute(config.numberOfLayers, config.contextLength, config.kvLength, Float.BYTES,
                JlamaPageGeometry.SESSION_PAGE_BUDGET);
        refuseUnless(paging.tokensPerPage() % blockTokens == 0, "%s: max_position_embeddings=%d with %d layers of %d-float KV rows makes Jlama page "
                        + "the cache %d layer(s) by %d token(s), which blocks of %d tokens cannot tile (Jlama splits layers by tokens only when a "
                        + "session's whole cache exceeds its 8 MiB page); use a model with a longer context", configFile, config.contextLength, config.numberOfLayers,
                config.kvLength, paging.layersPerPage(), paging.tokensPerPage(), blockTokens);
        return new JlamaModelDirectory(directory, type.name().toLowerCase(Locale.ROOT), config.numberOfLayers, config.numberOfKeyValueHeads,
                config.headSize, config.contextLength, vocabulary, config.bosToken, paging);
    }

    /**
     * Returns the elements of one token's key (or value) row in one layer.
     *
     * @return {@code kvHeads * headSize}.
     */
    public int kvLength()
    {
        return kvHeads * headSize;
    }

    /**
     * Returns the bytes one token's keys and values take over every layer in F32 working memory.
     *
     * @return {@code 2 * layers * kvLength * 4}.
     */
    public long bytesPerToken()
    {
        return 2L * layers * kvLength() * Float.BYTES;
    }

    private static ModelType modelType(Path configFile, String modelType)
    {
        String known = GENERATIVE.stream().map(t -> t.name().toLowerCase(Locale.ROOT)).sorted().collect(Collectors.joining(", "));
        refuseUnless(!modelType.isEmpty(), "%s has no model_type; Jlama needs it to pick the architecture (one of %s)", configFile, known);
        ModelType type;
        try {
            type = ModelType.valueOf(modelType.toUpperCase(Locale.ROOT));
        }
        catch (IllegalArgumentException e) {
            throw refusal("%s: model_type=%s is not an architecture Jlama loads (expected one of %s)", configFile, modelType, known);
        }
        refuseUnless(GENERATIVE.contains(type), "%s: model_type=%s is an encoder without decode steps; give a generative model (one of %s)",
                configFile, modelType, known);
        return type;
    }

    /** The ids the tokenizer knows: one past the largest of its vocabulary and its added tokens. */
    private static int tokenizerVocabulary(Path tokenizerFile)
    {
        JsonNode tokenizer = readTree(tokenizerFile);
        int[] largest = {-1};
        tokenizer.path("model").path("vocab").forEach(id -> largest[0] = Math.max(largest[0], id.asInt(-1)));
        tokenizer.path("added_tokens").forEach(token -> largest[0] = Math.max(largest[0], token.path("id").asInt(-1)));
        return largest[0] + 1;
    }

    private static JsonNode readTree(Path file)
    {
        try {
            return JsonSupport.om.readTree(file.toFile());
        }
        catch (IOException | RuntimeException e) {
            throw refusal("%s is not valid JSON: %s; fix the file or download the model again", file, oneLine(e.getMessage()));
        }
    }

    private static String oneLine(String message)
    {
        String text = message == null ? "" : message;
        int newline = text.indexOf('\n');
        return newline < 0 ? text : text.substring(0, newline);
    }

    private static void refuseUnless(boolean condition, String format, Object... args)
    {
        if (!condition) {
            throw refusal(format, args);
        }
    }

    private static KvBridgeException refusal(String format, Object... args)
    {
        return new KvBridgeException(ErrorCode.INVALID_ARGUMENT, String.format(Locale.ROOT, format, args));
    }
}
