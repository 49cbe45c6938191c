package io.kvbridge.core.engine;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What the engine said so far about one request it streams layer by layer: which of the rank's
 * layers are computed, and whether all are. The engine announces from its own threads (under the
 * stream's monitor, so that "twice" and "after all done" are decided once); the worker reads the
 * bits without locking and keeps the writes it made of them in {@link #targets}.
 */
final class LayerStream
{
    final String requestId;
    // below the streaming threshold: written once, after all layers are computed
    final boolean whole;
    private final StreamLayers layers;
    private final AtomicLongArray computed;
    // written under the monitor after the layer's bit, so that a reader that sees the count sees the bits
    private volatile int announced;
    private volatile boolean allComputed;
    // set by a caller, cleared by the worker when it looked at the new layers
    volatile boolean changed;
    // worker only: one per consumer rank that registered
    final List<StreamTarget> targets = new ArrayList<>(1);
    // worker only: one per consumer rank that pulls and asked for the layers
    final List<StreamAnnouncer.Watcher> watchers = new ArrayList<>(1);

    LayerStream(String requestId, StreamLayers layers, boolean whole)
    {
        this.requestId = requestId;
        this.whole = whole;
        this.layers = layers;
        this.computed = new AtomicLongArray((layers.count() + 63) / 64);
    }

    /** Records a computed layer; allocates nothing unless it refuses. */
    synchronized void computed(String layer)
    {
        int index = layers.indexOf(layer);
        if (index < 0) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "request " + requestId + ": layer " + layer + " is not a layer of this rank "
                    + "(it holds " + layers.names() + "); announce only the layers the rank's cache geometry lists");
        }
        if (allComputed) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "request " + requestId + ": layer " + layer
                    + " announced after all its layers were said computed; nothing was moved for it");
        }
        long bit = 1L << (index & 63);
        long word = computed.get(index >>> 6);
        if ((word & bit) != 0) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "request " + requestId + ": layer " + layer
                    + " was announced computed before; announce each layer once");
        }
        computed.set(index >>> 6, word | bit);
        announced++;
        changed = true;
    }

    /** Records that every layer is computed; refuses while one is not. */
    synchronized void markAllComputed()
    {
        if (allComputed) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "request " + requestId + ": all layers were said computed before");
        }
        if (announced != layers.count()) {
            List<String> missing = new ArrayList<>();
            for (int l = 0; l < layers.count(); l++) {
                if (!isComputed(l)) {
                    missing.add(layers.name(l));
                }
            }
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "request " + requestId + ": layers " + missing
                    + " of this rank were not announced computed; announce them or abort the request");
        }
        allComputed = true;
        changed = true;
    }

    boolean isComputed(int layer)
    {
        return (computed.get(layer >>> 6) & (1L << (layer & 63))) != 0;
    }

    /** {@return how many layers were announced computed} */
    int announcedCount()
    {
        return announced;
    }

    boolean allComputed()
    {
        return allComputed;
    }
}
