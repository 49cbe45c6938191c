package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One loaded Jlama model and the two steps disaggregated serving splits: the prompt's forward pass
 * (prefill) and one greedy decode step at a position. Every token that goes through Jlama's forward
 * pass is counted, so a decoder can prove it never ran the prompt.
 *
 * <p>Sessions live in a {@link KvBufferCache} of this engine's own, whose pages Jlama maps from files
 * in the working directory: native memory at fixed addresses that a transport can register.
 */
public final class JlamaEngine implements AutoCloseable
{
    private final AbstractModel model;
    private final KvBufferCache sessions;
    private final JlamaPageGeometry paging;
    private final AtomicLong forwardTokens = new AtomicLong();
    private final AtomicLong forwardCalls = new AtomicLong();
    private final LayerProgress progress = new LayerProgress();

    private JlamaEngine(AbstractModel model)
    {
        this.model = model;
        this.sessions = new KvBufferCache(model);
        this.paging = JlamaPageGeometry.of(model);
        // every block tells the progress when it passed; silent unless a prefill asked for layer announcements
        LayerAnnouncingBlock.install(model, progress);
    }

    /**
     * Loads a model directory through Jlama's normal loading code.
     *
     * @param modelDirectory holds {@code config.json}, {@code model.safetensors}, {@code tokenizer.json}.
     * @param workingDirectory where Jlama maps the KV pages; created when missing.
     * @param workingType Jlama's working dtype; {@code F32} (the logits read-out assumes it).
     * @return the engine.
     */
    public static JlamaEngine load(Path modelDirectory, Path workingDirectory, DType workingType)
    {
        KvBridgeException.check(workingType == DType.F32, ErrorCode.UNSUPPORTED,
                "working dtype %s: this engine reads logits as F32 and supports F32 working memory only", workingType);
        try {
            Files.createDirectories(workingDirectory);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot create Jlama's working directory " + workingDirectory, e);
        }
        AbstractModel model = ModelSupport.loadModel(modelDirectory.toFile(), workingDirectory.toFile(), workingType, workingType, Optional.empty(),
                Optional.empty());
        // Jlama may pick its own working type for some weights; the logits read-out and the layout's row size assume F32
        if (model.getWorkingDType() != DType.F32) {
            DType loaded = model.getWorkingDType();
            model.close();
            throw new KvBridgeException(ErrorCode.UNSUPPORTED, "model " + modelDirectory + " loads with working dtype " + loaded
                    + ": this engine reads logits as F32 and supports F32 working memory only; give a float32, bfloat16 or float16 model");
        }
        return new JlamaEngine(model);
    }

    /**
     * Returns the loaded model.
     *
     * @return the model.
     */
    public AbstractModel model()
    {
        return model;
    }

    /**
     * Returns how Jlama pages this model's sessions.
     *
     * @return the paging.
     */
    public JlamaPageGeometry paging()
    {
        return paging;
    }

    /**
     * Returns (creating on first use) a session's KV buffer.
     *
     * @param session the session id.
     * @return its buffer.
     */
    public KvBufferCache.KvBuffer session(UUID session)
    {
        return sessions.getKvBuffer(session);
    }

    /**
     * Runs the prompt's forward pass into a session's cache, positions {@code 0..prompt.length-1},
     * and samples the first token greedily.
     *
     * @param buffer the session's buffer.
     * @param prompt the prompt's tokens.
     * @return the first generated token and the logits it was chosen from.
     */
    public Step prefill(KvBufferCache.KvBuffer buffer, int[] prompt)
    {
        forwardCalls.incrementAndGet();
        forwardTokens.addAndGet(prompt.length);
        try (AbstractTensor<?, ?> out = model.batchForward(prompt, 0, buffer)) {
            return sample(out.slice(out.shape().first() - 1));
        }
    }

    /**
     * Runs the forward pass over a prompt's tokens from {@code start} on, positions
     * {@code start..prompt.length-1}, attending to the rows the session already holds before
     * {@code start} (computed here earlier or received), and samples the first token greedily. Only
     * the new tokens are counted as forwarded.
     *
     * @param buffer the session's buffer, holding positions {@code 0..start-1}.
     * @param prompt the whole prompt's tokens.
     * @param start the first position to compute; {@code 0 <= start < prompt.length}.
     * @return the first generated token and the logits it was chosen from.
     */
    public Step prefillFrom(KvBufferCache.KvBuffer buffer, int[] prompt, int start)
    {
        KvBridgeException.check(start >= 0 && start < prompt.length, ErrorCode.INVALID_ARGUMENT,
                "prefill from position %d of a %d-token prompt: at least one new token must follow the held ones", start, prompt.length);
        if (start == 0) {
            return prefill(buffer, prompt);
        }
        int[] fresh = Arrays.copyOfRange(prompt, start, prompt.length);
        forwardCalls.incrementAndGet();
        forwardTokens.addAndGet(fresh.length);
        try (AbstractTensor<?, ?> out = model.batchForward(fresh, start, buffer)) {
            return sample(out.slice(out.shape().first() - 1));
        }
    }

    /**
     * Runs a prompt's forward pass as {@link #prefill(KvBufferCache.KvBuffer, int[])} does, in the
     * same chunks and with the same arithmetic, and tells the listener each layer as soon as its
     * rows for the whole prompt are written: while the last chunk of the prompt goes through the
     * layers, in layer order.
     *
     * @param buffer the session's buffer.
     * @param prompt the prompt's tokens.
     * @param listener told each layer of the model once, from this thread, during the pass.
     * @return the first generated token and the logits it was chosen from.
     */
    public Step prefill(KvBufferCache.KvBuffer buffer, int[] prompt, LayerListener listener)
    {
        progress.arm(prompt.length, listener);
        try {
            return prefill(buffer, prompt);
        }
        finally {
            progress.disarm();
        }
    }

    /**
     * Runs the forward pass over a prompt's new tokens as
     * {@link #prefillFrom(KvBufferCache.KvBuffer, int[], int)} does, in the same chunks and with the
     * same arithmetic, and tells the listener each layer as soon as its rows up to the prompt's end
     * are written (the rows before {@code start} were there before the pass).
     *
     * @param buffer the session's buffer, holding positions {@code 0..start-1}.
     * @param prompt the whole prompt's tokens.
     * @param start the first position to compute; {@code 0 <= start < prompt.length}.
     * @param listener told each layer of the model once, from this thread, during the pass.
     * @return the first generated token and the logits it was chosen from.
     */
    public Step prefillFrom(KvBufferCache.KvBuffer buffer, int[] prompt, int start, LayerListener listener)
    {
        // positions are absolute: a layer holds the whole prompt once the chunk ending at prompt.length passed it
        progress.arm(prompt.length, listener);
        try {
            return prefillFrom(buffer, prompt, start);
        }
        finally {
            progress.disarm();
        }
    }

    /**
     * Runs one decode step: the token at a position, attending to every position before it.
     *
     * @param buffer the session's buffer, holding positions {@code 0..position-1}.
     * @param token the token at {@code position}.
     * @param position its position.
     * @return the next token and its logits.
     */
    public Step decode(KvBufferCache.KvBuffer buffer, int token, int position)
    {
        forwardCalls.incrementAndGet();
        forwardTokens.incrementAndGet();
        try (AbstractTensor<?, ?> out = model.forward(token, position, buffer, Optional.empty())) {
            return sample(out);
        }
    }

    private Step sample(AbstractTensor<?, ?> output)
    {
        int vocabulary = model.getConfig().vocabularySize;
        try (AbstractTensor<?, ?> logits = model.makeDenseTensor(1, vocabulary)) {
            int next = model.sample(output, 0f, 0f, logits);
            float[] values = new float[vocabulary];
            logits.getMemorySegment().asByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(values);
            return new Step(next, values);
        }
    }

    /**
     * Returns how many tokens went through Jlama's forward pass.
     *
     * @return the count.
     */
    public long forwardTokens()
    {
        return forwardTokens.get();
    }

    /**
     * Returns how many forward passes (a prompt batch or one decode step) ran.
     *
     * @return the count.
     */
    public long forwardCalls()
    {
        return forwardCalls.get();
    }

    @Override
    public void close()
    {
        sessions.close();
        model.close();
    }

    /**
     * One greedy step's result.
     *
     * @param token the argmax token.
     * @param logits the raw logits over the vocabulary.
     */
    public record Step(int token, float[] logits)
    {
    }
}
