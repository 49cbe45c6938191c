package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.KvBufferCache;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The per-layer hook in Jlama's forward pass: a prefill tells each layer once, in layer order, at
 * the moment that layer's rows for the whole prompt are written and the next layer's last row is
 * not, also when Jlama runs the prompt in several chunks; and the pass computes the same bits as
 * one without the hook.
 */
class LayerHookTest
{
    @TempDir
    static Path dir;
    static JlamaEngine engine;

    @BeforeAll
    static void load()
    {
        engine = JlamaEngine.load(SyntheticModelWriter.write(dir.resolve("model"), SyntheticModel.llamaGqa(3)), dir.resolve("work"), DType.F32);
    }

    @AfterAll
    static void close()
    {
        engine.close();
    }

    /** 40 tokens: one chunk; 300: two of Jlama's 256-token chunks, so a layer is complete only in the second. */
    @ParameterizedTest
    @ValueSource(ints = {40, 300})
    void eachLayerIsToldOnceWhenItsLastRowIsWrittenAndBeforeTheNextLayers(int tokens)
    {
        int[] prompt = new SplittableRandom(tokens).ints(tokens, 3, 200).toArray();
        prompt[0] = 1;
        int layers = engine.model().getConfig().numberOfLayers;
        int last = tokens - 1;
        KvBufferCache.KvBuffer streamed = engine.session(UUID.randomUUID());
        List<Integer> told = new ArrayList<>();
        List<byte[]> rowWhenTold = new ArrayList<>();
        List<byte[]> nextRowWhenTold = new ArrayList<>();
        JlamaEngine.Step withHook = engine.prefill(streamed, prompt, layer -> {
            told.add(layer);
            rowWhenTold.add(keyRow(streamed, layer, last));
            nextRowWhenTold.add(layer + 1 < layers ? keyRow(streamed, layer + 1, last) : new byte[0]);
        });
        assertEquals(IntStream.range(0, layers).boxed().toList(), told, "every layer once, in order");
        for (int layer = 0; layer < layers; layer++) {
            assertArrayEquals(keyRow(streamed, layer, last), rowWhenTold.get(layer), "layer " + layer + "'s last row was final when it was told");
            if (layer + 1 < layers) {
                assertArrayEquals(new byte[keyRow(streamed, layer + 1, last).length], nextRowWhenTold.get(layer),
                        "layer " + (layer + 1) + "'s last row was not yet written when layer " + layer + " was told");
            }
        }
        KvBufferCache.KvBuffer plain = engine.session(UUID.randomUUID());
        JlamaEngine.Step without = engine.prefill(plain, prompt);
        assertEquals(without.token(), withHook.token());
        assertArrayEquals(bits(without.logits()), bits(withHook.logits()), "the hook leaves Jlama's arithmetic alone");
        for (int layer = 0; layer < layers; layer++) {
            assertArrayEquals(keyRow(plain, layer, last), keyRow(streamed, layer, last), "layer " + layer + "'s key rows");
        }
        // the streamed prefill's listener must not hear of later passes
        engine.decode(streamed, withHook.token(), tokens);
        engine.prefill(engine.session(UUID.randomUUID()), prompt);
        assertEquals(layers, told.size(), "decode steps and plain prefills after the streamed prefill tell its listener nothing");
    }

    private static byte[] keyRow(KvBufferCache.KvBuffer buffer, int layer, int position)
    {
        MemorySegment row = buffer.getKeyTensorForPosition(layer, position).getMemorySegment();
        return row.toArray(ValueLayout.JAVA_BYTE);
    }

    private static int[] bits(float[] values)
    {
        int[] bits = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            bits[i] = Float.floatToRawIntBits(values[i]);
        }
        return bits;
    }
}
