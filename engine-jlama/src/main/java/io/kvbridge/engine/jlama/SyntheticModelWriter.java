package io.kvbridge.engine.jlama;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a Jlama model directory with seeded random weights: {@code config.json},
 * {@code model.safetensors} (F32) and a byte-level {@code tokenizer.json}. The same shape and seed
 * give the same bytes, so two JVMs that write the model themselves load the same weights.
 */
public final class SyntheticModelWriter
{
    private static final ObjectMapper JSON = new ObjectMapper();

    private SyntheticModelWriter()
    {
    }

    /**
     * Writes the model into a directory, creating it when needed.
     *
     * @param directory the model directory.
     * @param model the shape and seed.
     * @return the directory.
     */
    public static Path write(Path directory, SyntheticModel model)
    {
        try {
            Files.createDirectories(directory);
            Files.writeString(directory.resolve("config.json"), config(model).toPrettyString());
            Files.writeString(directory.resolve("tokenizer.json"), tokenizer(model).toPrettyString());
            writeWeights(directory.resolve("model.safetensors"), model);
            return directory;
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot write the model into " + directory + ": " + e.getMessage(), e);
        }
    }

    private static ObjectNode config(SyntheticModel model)
    {
        ObjectNode config = JSON.createObjectNode();
        config.put("model_type", model.architecture());
        config.put("max_position_embeddings", model.contextLength());
        config.put("hidden_size", model.hidden());
        config.put("intermediate_size", model.intermediate());
        config.put("num_attention_heads", model.heads());
        config.put("num_key_value_heads", model.kvHeads());
        config.put("num_hidden_layers", model.layers());
        config.put("rms_norm_eps", 1e-5);
        config.put("vocab_size", model.vocabulary());
        config.put("bos_token_id", SyntheticModel.BOS);
        config.put("eos_token_id", SyntheticModel.EOS);
        config.put("hidden_act", "silu");
        config.put("rope_theta", 10000.0);
        config.put("torch_dtype", "float32");
        return config;
    }

    /** Byte-fallback BPE without merges: every ordinary token stands for itself. */
    private static ObjectNode tokenizer(SyntheticModel model)
    {
        ObjectNode vocab = JSON.createObjectNode();
        vocab.put("<unk>", 0);
        vocab.put("<s>", SyntheticModel.BOS);
        vocab.put("</s>", SyntheticModel.EOS);
        for (int b = 0; b < 256; b++) {
            vocab.put(String.format(Locale.ROOT, "<0x%02X>", b), SyntheticModel.FIRST_ORDINARY_TOKEN + b);
        }
        for (int id = SyntheticModel.FIRST_ORDINARY_TOKEN + 256; id < model.vocabulary(); id++) {
            vocab.put("w" + id, id);
        }
        ObjectNode bpe = JSON.createObjectNode();
        bpe.put("type", "BPE");
        bpe.put("unk_token", "<unk>");
        bpe.put("fuse_unk", false);
        bpe.put("byte_fallback", true);
        bpe.set("vocab", vocab);
        bpe.set("merges", JSON.createArrayNode());
        ArrayNode added = JSON.createArrayNode();
        String[] special = {"<unk>", "<s>", "</s>"};
        for (int id = 0; id < special.length; id++) {
            ObjectNode token = added.addObject();
            token.put("id", id);
            token.put("content", special[id]);
            token.put("special", true);
        }
        ObjectNode root = JSON.createObjectNode();
        root.put("version", "1.0");
        root.set("added_tokens", added);
        root.set("model", bpe);
        return root;
    }

    private record Tensor(String name, int[] shape, float scale, float center)
    {
        long elements()
        {
            long n = 1;
            for (int d : shape) {
                n *= d;
            }
            return n;
        }
    }

    private static List<Tensor> tensors(SyntheticModel m)
    {
        int q = m.heads() * m.headSize();
        int kv = m.kvLength();
        float attention = (float) (1 / Math.sqrt(m.hidden()));
        float down = (float) (1 / Math.sqrt(m.intermediate()));
        List<Tensor> tensors = new ArrayList<>();
        tensors.add(new Tensor("model.embed_tokens.weight", new int[] {m.vocabulary(), m.hidden()}, 1f, 0f));
        for (int layer = 0; layer < m.layers(); layer++) {
            String base = "model.layers." + layer + ".";
            tensors.add(new Tensor(base + "input_layernorm.weight", new int[] {m.hidden()}, 0.1f, 1f));
            tensors.add(new Tensor(base + "self_attn.q_proj.weight", new int[] {q, m.hidden()}, attention, 0f));
            tensors.add(new Tensor(base + "self_attn.k_proj.weight", new int[] {kv, m.hidden()}, attention, 0f));
            tensors.add(new Tensor(base + "self_attn.v_proj.weight", new int[] {kv, m.hidden()}, attention, 0f));
            if ("qwen2".equals(m.architecture())) {
                tensors.add(new Tensor(base + "self_attn.q_proj.bias", new int[] {q}, 0.1f, 0f));
                tensors.add(new Tensor(base + "self_attn.k_proj.bias", new int[] {kv}, 0.1f, 0f));
                tensors.add(new Tensor(base + "self_attn.v_proj.bias", new int[] {kv}, 0.1f, 0f));
            }
            tensors.add(new Tensor(base + "self_attn.o_proj.weight", new int[] {m.hidden(), q}, attention, 0f));
            tensors.add(new Tensor(base + "post_attention_layernorm.weight", new int[] {m.hidden()}, 0.1f, 1f));
            tensors.add(new Tensor(base + "mlp.gate_proj.weight", new int[] {m.intermediate(), m.hidden()}, attention, 0f));
            tensors.add(new Tensor(base + "mlp.up_proj.weight", new int[] {m.intermediate(), m.hidden()}, attention, 0f));
            tensors.add(new Tensor(base + "mlp.down_proj.weight", new int[] {m.hidden(), m.intermediate()}, down, 0f));
        }
        tensors.add(new Tensor("model.norm.weight", new int[] {m.hidden()}, 0.1f, 1f));
        tensors.add(new Tensor("lm_head.weight", new int[] {m.vocabulary(), m.hidden()}, attention * 4, 0f));
        return tensors;
    }

    private static void writeWeights(Path file, SyntheticModel model) throws IOException
    {
        List<Tensor> tensors = tensors(model);
        Map<String, Object> header = new LinkedHashMap<>();
        header.put("__metadata__", Map.of("format", "pt"));
        long offset = 0;
        for (Tensor tensor : tensors) {
            long bytes = tensor.elements() * Float.BYTES;
            header.put(tensor.name(), Map.of("dtype", "F32", "shape", tensor.shape(), "data_offsets", new long[] {offset, offset + bytes}));
            offset += bytes;
        }
        byte[] json = JSON.writeValueAsBytes(header);
        int padded = (json.length + 7) / 8 * 8;
        ByteBuffer head = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
        head.putLong(padded).put(json);
        while (head.hasRemaining()) {
            head.put((byte) ' ');
        }
        head.flip();
        SplittableRandom random = new SplittableRandom(model.seed());
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            out.write(head);
            ByteBuffer chunk = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
            for (Tensor tensor : tensors) {
                for (long i = 0; i < tensor.elements(); i++) {
                    if (!chunk.hasRemaining()) {
                        flush(out, chunk);
                    }
                    chunk.putFloat(tensor.center() + tensor.scale() * (float) (random.nextDouble() * 2 - 1));
                }
            }
            flush(out, chunk);
        }
    }

    private static void flush(FileChannel out, ByteBuffer chunk) throws IOException
    {
        chunk.flip();
        while (chunk.hasRemaining()) {
            out.write(chunk);
        }
        chunk.clear();
    }
}
