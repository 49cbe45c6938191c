package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.TransformerBlock;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One of Jlama's transformer blocks, wrapped so that a prefill learns when the block's layer is
 * done: it runs the wrapped block's own {@code forward} unchanged (the same arithmetic, so the same
 * bits) and then tells the engine's {@link LayerProgress} which positions the layer now holds.
 * Jlama's {@code AbstractModel.forward} calls every block of the model in layer order for each
 * prompt chunk, so the wrapper sees every chunk pass every layer.
 *
 * <p>Jlama keeps its blocks in {@code AbstractModel.transformerBlocks}, a protected field with no
 * accessor; {@link #install} replaces each element of that array through a private lookup, once,
 * at load time.
 */
final class LayerAnnouncingBlock extends TransformerBlock
{
    private final TransformerBlock wrapped;
    private final int layer;
    private final LayerProgress progress;

    private LayerAnnouncingBlock(AbstractModel model, TransformerBlock wrapped, int layer, LayerProgress progress)
    {
        // the super fields stay unused: forward delegates to the wrapped block, which holds the weights
        super(model, layer, Optional.empty(), null, Optional.empty(), Optional.empty(), null, Optional.empty(), Optional.empty());
        this.wrapped = wrapped;
        this.layer = layer;
        this.progress = progress;
    }

    /**
     * Wraps every transformer block of a model that computes every layer.
     *
     * @param model the loaded model.
     * @param progress told after each block's forward pass.
     */
    static void install(AbstractModel model, LayerProgress progress)
    {
        TransformerBlock[] blocks = (TransformerBlock[]) BLOCKS.get(model);
        int first = model.getConfig().dctx().layerStart;
        for (int i = 0; i < blocks.length; i++) {
            blocks[i] = new LayerAnnouncingBlock(model, blocks[i], first + i, progress);
        }
    }

    @Override
    @SuppressWarnings("rawtypes") // Jlama declares the method with raw tensors; an override must match
    public AbstractTensor forward(AbstractTensor embedding, int position, KvBufferCache.KvBuffer kvBuffer,
            Optional<Consumer<List<AbstractTensor>>> tensorReducer)
    {
        // the chunk's token count, read before the caller closes its input
        int tokens = embedding.shape().first();
        AbstractTensor out = wrapped.forward(embedding, position, kvBuffer, tensorReducer);
        progress.passed(layer, position + tokens);
        return out;
    }

    private static final VarHandle BLOCKS;

    static {
        try {
            BLOCKS = MethodHandles.privateLookupIn(AbstractModel.class, MethodHandles.lookup())
                    .findVarHandle(AbstractModel.class, "transformerBlocks", TransformerBlock[].class);
        }
        catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError("Jlama's AbstractModel has no transformerBlocks field of TransformerBlock[]: " + e);
        }
    }
}
