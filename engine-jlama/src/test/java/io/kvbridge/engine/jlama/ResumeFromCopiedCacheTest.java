package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.KvBufferCache;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The crux of disaggregation with Jlama, in one JVM: a session whose cache is only copied from
 * another session's prefill (the prompt never run through it) decodes exactly the tokens and logits
 * of uninterrupted generation.
 */
class ResumeFromCopiedCacheTest
{
    private static final int DECODE_STEPS = 6;

    @TempDir
    static Path dir;
    static JlamaEngine engine;

    @BeforeAll
    static void load()
    {
        Path model = SyntheticModelWriter.write(dir.resolve("model"), SyntheticModel.llamaGqa(7));
        engine = JlamaEngine.load(model, dir.resolve("work"), DType.F32);
    }

    @AfterAll
    static void close()
    {
        engine.close();
    }

    @Test
    void copiedCacheResumesBitIdentically()
    {
        int[] prompt = prompt(301, 11);
        Generation reference = generate(engine.session(UUID.randomUUID()), prompt);

        KvBufferCache.KvBuffer producer = engine.session(UUID.randomUUID());
        JlamaEngine.Step first = engine.prefill(producer, prompt);
        KvBufferCache.KvBuffer consumer = engine.session(UUID.randomUUID());
        copyRows(producer, consumer, prompt.length, -1);
        long forwardedBefore = engine.forwardTokens();
        Generation resumed = decode(consumer, prompt.length, first);

        assertEquals(DECODE_STEPS, engine.forwardTokens() - forwardedBefore, "the resumed session ran only its decode steps through the model");
        assertArrayEquals(reference.tokens, resumed.tokens);
        for (int s = 0; s < reference.logits.length; s++) {
            assertArrayEquals(bits(reference.logits[s]), bits(resumed.logits[s]), "logits of step " + s);
        }
    }

    @Test
    void oneChangedByteChangesTheLogits()
    {
        int[] prompt = prompt(64, 12);
        KvBufferCache.KvBuffer producer = engine.session(UUID.randomUUID());
        JlamaEngine.Step first = engine.prefill(producer, prompt);
        KvBufferCache.KvBuffer intact = engine.session(UUID.randomUUID());
        copyRows(producer, intact, prompt.length, -1);
        KvBufferCache.KvBuffer corrupted = engine.session(UUID.randomUUID());
        copyRows(producer, corrupted, prompt.length, 17);

        Generation good = decode(intact, prompt.length, first);
        Generation bad = decode(corrupted, prompt.length, first);
        assertFalse(Arrays.equals(bits(good.logits[1]), bits(bad.logits[1])), "a changed key byte must change the logits");
    }

    private static Generation generate(KvBufferCache.KvBuffer buffer, int[] prompt)
    {
        return decode(buffer, prompt.length, engine.prefill(buffer, prompt));
    }

    private static Generation decode(KvBufferCache.KvBuffer buffer, int promptLength, JlamaEngine.Step first)
    {
        int[] tokens = new int[DECODE_STEPS + 1];
        float[][] logits = new float[DECODE_STEPS + 1][];
        tokens[0] = first.token();
        logits[0] = first.logits();
        for (int s = 1; s <= DECODE_STEPS; s++) {
            JlamaEngine.Step step = engine.decode(buffer, tokens[s - 1], promptLength + s - 1);
            tokens[s] = step.token();
            logits[s] = step.logits();
        }
        return new Generation(tokens, logits);
    }

    /** Copies the K and V rows of positions {@code [0, tokens)}; flips one bit of layer 3's key at {@code corruptPosition}. */
    private static void copyRows(KvBufferCache.KvBuffer from, KvBufferCache.KvBuffer to, int tokens, int corruptPosition)
    {
        int kvLength = engine.model().getConfig().kvLength;
        for (int layer = 0; layer < engine.model().getConfig().numberOfLayers; layer++) {
            for (int p = 0; p < tokens; p++) {
                to.getKeyTensorForPosition(layer, p).copyFrom(from.getKeyTensorForPosition(layer, p), 0, 0, kvLength);
                to.getValTensorForPosition(layer, p).copyFrom(from.getValTensorForPosition(layer, p), 0, 0, kvLength);
            }
        }
        if (corruptPosition >= 0) {
            var row = to.getKeyTensorForPosition(3, corruptPosition);
            float v = row.get(0, 5);
            row.set(Float.intBitsToFloat(Float.floatToRawIntBits(v) ^ 0x00100000), 0, 5);
        }
    }

    static int[] prompt(int length, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        int[] prompt = new int[length];
        prompt[0] = SyntheticModel.BOS;
        for (int i = 1; i < length; i++) {
            prompt[i] = random.nextInt(SyntheticModel.FIRST_ORDINARY_TOKEN, 512);
        }
        return prompt;
    }

    static int[] bits(float[] values)
    {
        int[] bits = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            bits[i] = Float.floatToRawIntBits(values[i]);
        }
        return bits;
    }

    private record Generation(int[] tokens, float[][] logits)
    {
    }
}
