package io.kvbridge.engine.jlama;

/**
 * Follows one prefill through the layers and says when a layer's KV is complete. Jlama's
 * {@code batchForward} runs a prompt in chunks of {@code jlama.max_batch_size} tokens (256 by
 * default), each chunk through every layer before the next; a layer's rows are all written only
 * when the chunk ending at the prompt's last position passed it. Chunk sizes stay Jlama's, so the
 * arithmetic (and the bits) are those of an engine that does not stream.
 *
 * <p>Only one prefill runs at a time per engine (the server's single loop), so one instance,
 * re-armed per prompt, serves every request without allocating.
 */
final class LayerProgress
{
    /** The prompt's end while a prefill that wants layer announcements runs; -1 otherwise (decode steps, plain prefill). */
    private int promptEnd = -1;
    private LayerListener listener;

    void arm(int promptEnd, LayerListener listener)
    {
        this.promptEnd = promptEnd;
        this.listener = listener;
    }

    void disarm()
    {
        promptEnd = -1;
        listener = null;
    }

    /** A block's forward pass wrote its layer's rows up to (not including) {@code end}. */
    void passed(int layer, int end)
    {
        if (promptEnd >= 0 && end >= promptEnd) {
            listener.layerComputed(layer);
        }
    }
}
