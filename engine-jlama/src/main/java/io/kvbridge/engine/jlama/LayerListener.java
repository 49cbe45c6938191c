package io.kvbridge.engine.jlama;

/**
 * Told, from inside a prefill's forward pass, when a layer's KV rows for the whole prompt are
 * written; called on the engine's thread between two layers, so it must be quick.
 */
@FunctionalInterface
public interface LayerListener
{
    /**
     * Says that a layer's KV for every prompt position is in the session's pages.
     *
     * @param layer the global layer index.
     */
    void layerComputed(int layer);
}
