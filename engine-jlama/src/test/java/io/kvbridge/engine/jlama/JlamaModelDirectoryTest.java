package io.kvbridge.engine.jlama;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A model directory's shape comes from its own files, and what the engines could not serve is
 * refused in one line naming the value and the fix, before any engine starts.
 */
class JlamaModelDirectoryTest
{
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void theShapeIsReadFromTheDirectoryNotFromAPreset(@TempDir Path dir)
    {
        Path model = SyntheticModelWriter.write(dir.resolve("qwen"), SyntheticModel.qwen2(3));
        JlamaModelDirectory read = JlamaModelDirectory.inspect(model, 16);
        assertEquals("qwen2", read.architecture());
        assertEquals(6, read.layers());
        assertEquals(4, read.kvHeads());
        assertEquals(32, read.headSize());
        assertEquals(4096, read.contextLength());
        assertEquals(512, read.vocabulary());
        assertEquals(SyntheticModel.BOS, read.bosToken());
        assertEquals(2L * 6 * 128 * Float.BYTES, read.bytesPerToken());
        assertEquals(4, read.paging().layersPerPage());
        assertEquals(2048, read.paging().tokensPerPage());
    }

    @Test
    void aMissingDirectoryOrFileIsRefused(@TempDir Path dir) throws IOException
    {
        assertRefused(dir.resolve("nowhere"), "does not exist or is not a directory");
        assertRefused(dir, "has no config.json");
        Path model = SyntheticModelWriter.write(dir.resolve("m"), SyntheticModel.llamaGqa(3));
        Files.delete(model.resolve("tokenizer.json"));
        assertRefused(model, "has no tokenizer.json");
        Files.delete(model.resolve("model.safetensors"));
        assertRefused(model, "has neither model.safetensors nor model.safetensors.index.json");
    }

    @Test
    void anArchitectureOrDtypeTheEnginesCannotTakeIsRefusedNamingIt(@TempDir Path dir) throws IOException
    {
        Path model = SyntheticModelWriter.write(dir.resolve("m"), SyntheticModel.llamaGqa(3));
        editConfig(model, "model_type", "mamba");
        assertRefused(model, "model_type=mamba is not an architecture Jlama loads (expected one of gemma, gemma2, gpt2, granite, llama, mistral, mixtral, qwen2)");
        editConfig(model, "model_type", "bert");
        assertRefused(model, "model_type=bert is an encoder without decode steps");
        editConfig(model, "model_type", "llama");
        editConfig(model, "torch_dtype", "int8");
        assertRefused(model, "torch_dtype=int8 is not one this engine takes");
        editConfig(model, "torch_dtype", "float32");
        editConfig(model, "bos_token_id", 9999);
        assertRefused(model, "bos_token_id=9999 is outside the 512 ids");
    }

    @Test
    void aContextTooShortForJlamasPagingIsRefused(@TempDir Path dir)
    {
        // 1024 tokens x 8 layers x 2 planes x 64 floats is 4 MiB, under Jlama's 8 MiB page: it falls back to pages of one layer by one token
        Path model = SyntheticModelWriter.write(dir.resolve("short"), new SyntheticModel("llama", 8, 8, 2, 256, 512, 512, 1024, 3));
        assertRefused(model, "max_position_embeddings=1024 with 8 layers of 64-float KV rows makes Jlama page the cache 1 layer(s) by 1 token(s)");
    }

    @Test
    void promptsUseOnlyIdsTheTokenizerKnows(@TempDir Path dir) throws IOException
    {
        Path model = SyntheticModelWriter.write(dir.resolve("m"), SyntheticModel.llamaGqa(3));
        editConfig(model, "vocab_size", 1000);
        assertEquals(512, JlamaModelDirectory.inspect(model, 16).vocabulary(), "the tokenizer holds 512 ids, the embedding more");
    }

    private static void assertRefused(Path model, String expected)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> JlamaModelDirectory.inspect(model, 16));
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        assertTrue(!e.getMessage().contains("\n"), "one line: " + e.getMessage());
    }

    private static void editConfig(Path model, String field, Object value) throws IOException
    {
        ObjectNode config = (ObjectNode) JSON.readTree(model.resolve("config.json").toFile());
        config.set(field, JSON.valueToTree(value));
        JSON.writeValue(model.resolve("config.json").toFile(), config);
    }
}
