package io.kvbridge.engine.jlama.serve;

import com.github.tjake.jlama.tensor.KvBufferCache;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.engine.jlama.JlamaEngine;
import io.kvbridge.engine.jlama.JlamaStage;
import io.kvbridge.engine.jlama.LayerListener;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayout;

import java.util.function.IntConsumer;

/**
 * A prefill that hands its layers to kvbridge as Jlama's forward pass completes them: each layer of
 * this JVM's stage is announced with {@link ProducerConnector#layerComputed} the moment its rows for
 * the whole prompt are written, and {@link ProducerConnector#allLayersComputed} follows the pass.
 * The request must have been announced with {@code prefillStarted}. A stage computes every layer
 * but announces only its own, the layers it registered.
 *
 * <p>One instance serves every request of the engine's single loop; the layer names are built
 * once, so an announcement allocates nothing.
 */
final class StreamedPrefill implements LayerListener
{
    private final ProducerConnector producer;
    private final JlamaStage stage;
    private final String[] layerNames;
    private final IntConsumer beforeFirstLayer;
    private String requestId;
    private int slot;

    /**
     * Prepares the announcements of a stage.
     *
     * @param producer the stage's producer.
     * @param stage the layers this JVM registered.
     * @param beforeFirstLayer given the slot after layer 0 is computed, before it is announced (the
     *     negative control changes a byte there, before kvbridge may move it); null for nothing.
     */
    StreamedPrefill(ProducerConnector producer, JlamaStage stage, IntConsumer beforeFirstLayer)
    {
        this.producer = producer;
        this.stage = stage;
        this.beforeFirstLayer = beforeFirstLayer;
        this.layerNames = new String[stage.modelLayers()];
        for (int layer = 0; layer < layerNames.length; layer++) {
            layerNames[layer] = JlamaCacheLayout.layerName(layer);
        }
    }

    /**
     * Runs the prompt's forward pass, announcing this stage's layers as they complete, then says
     * every layer is computed.
     *
     * @param engine the engine.
     * @param slot the session slot whose pages the request's blocks name.
     * @param buffer the slot's pages.
     * @param prompt the prompt's tokens.
     * @param requestId the request given to {@code prefillStarted}.
     * @return the first token and its logits.
     */
    JlamaEngine.Step run(JlamaEngine engine, int slot, KvBufferCache.KvBuffer buffer, int[] prompt, String requestId)
    {
        return run(engine, slot, buffer, prompt, 0, requestId);
    }

    /**
     * Runs the forward pass over the prompt's tokens from {@code start} on (a conversation's later
     * turn: the slot holds the rows before it, kept or handed back), announcing this stage's layers
     * as the pass completes them, then says every layer is computed.
     *
     * @param engine the engine.
     * @param slot the session slot whose pages the request's blocks name.
     * @param buffer the slot's pages, holding positions {@code 0..start-1}.
     * @param prompt the whole prompt's tokens.
     * @param start the first position to compute.
     * @param requestId the request given to {@code prefillStarted}.
     * @return the first token and its logits.
     */
    JlamaEngine.Step run(JlamaEngine engine, int slot, KvBufferCache.KvBuffer buffer, int[] prompt, int start, String requestId)
    {
        this.requestId = requestId;
        this.slot = slot;
        try {
            JlamaEngine.Step first = engine.prefillFrom(buffer, prompt, start, this);
            producer.allLayersComputed(requestId);
            return first;
        }
        finally {
            this.requestId = null;
        }
    }

    @Override
    public void layerComputed(int layer)
    {
        if (layer == 0 && beforeFirstLayer != null) {
            beforeFirstLayer.accept(slot);
        }
        if (layer >= stage.firstLayer() && layer < stage.endLayer()) {
            producer.layerComputed(requestId, layerNames[layer]);
        }
    }
}
