package io.kvbridge.core.engine;

import io.kvbridge.api.BlockIds;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The requests a producer rank streams, by id, from their announcement until they are reported:
 * the engine's per-layer calls land here on the engine's threads, set a flag and wake the worker,
 * allocating nothing.
 */
final class LayerStreams
{
    private final StreamLayers layers;
    private final Runnable wake;
    private final int blockTokens;
    private final int minTokens;
    private final ConcurrentHashMap<String, LayerStream> byId = new ConcurrentHashMap<>();
    private volatile boolean changed;

    LayerStreams(StreamLayers layers, Runnable wake, int blockTokens, int minTokens)
    {
        this.layers = layers;
        this.wake = wake;
        this.blockTokens = blockTokens;
        this.minTokens = minTokens;
    }

    /** Starts a stream, whole when the request spans fewer tokens than the threshold; the caller has made sure the id is new. */
    LayerStream open(String requestId, BlockIds blocks)
    {
        int longest = 0;
        for (int g = 0; g < blocks.groupCount(); g++) {
            longest = Math.max(longest, blocks.size(g));
        }
        LayerStream stream = new LayerStream(requestId, layers, (long) longest * blockTokens < minTokens);
        byId.put(requestId, stream);
        return stream;
    }

    void layerComputed(String requestId, String layer)
    {
        stream(requestId, layer).computed(layer);
        changed = true;
        wake.run();
    }

    void allLayersComputed(String requestId)
    {
        stream(requestId, null).markAllComputed();
        changed = true;
        wake.run();
    }

    private LayerStream stream(String requestId, String layer)
    {
        LayerStream stream = requestId == null ? null : byId.get(requestId);
        if (stream == null) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "request " + requestId + (layer == null ? "" : ", layer " + layer)
                    + ": the request is not streamed by this rank (announce it with prefillStarted; it may have ended already)");
        }
        return stream;
    }

    /** {@return whether a stream changed since the last call}; worker only. */
    boolean takeChanged()
    {
        if (!changed) {
            return false;
        }
        changed = false;
        return true;
    }

    /** Forgets a reported request. */
    void ended(String requestId)
    {
        byId.remove(requestId);
    }

    int count()
    {
        return byId.size();
    }
}
