package io.kvbridge.engine.jlama.serve;

import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayout;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The decoder's evidence that a streamed session arrived layer by layer: it counts the sessions in
 * which it saw, between two polls, a layer loaded ({@link ConsumerConnector#layerLoaded}) while
 * another of the session's layers was still missing. A session moved whole never shows such a
 * state, since all its layers are marked loaded at once when it is received.
 *
 * <p>The check reads twice: first which layers are loaded, then whether one is still missing. A
 * loaded layer stays loaded, so a layer found missing in the second read was missing while every
 * layer of the first read was loaded, whatever the transport's threads did in between.
 */
final class PartialArrivals
{
    private final ConsumerConnector consumer;
    private final String[] layerNames;
    /** Sessions being received that were already seen partly loaded: each counts once. */
    private final Set<String> counted = new HashSet<>();
    private long sessions;

    /**
     * Prepares the checks of a decoder that holds every layer.
     *
     * @param consumer the decoder's consumer.
     * @param layers the model's layers.
     */
    PartialArrivals(ConsumerConnector consumer, int layers)
    {
        this.consumer = consumer;
        this.layerNames = new String[layers];
        for (int layer = 0; layer < layers; layer++) {
            layerNames[layer] = JlamaCacheLayout.layerName(layer);
        }
    }

    /**
     * Looks at every streamed session still being received (its first token not known yet).
     *
     * @param receiving the sessions being received, by id.
     */
    void observe(Map<String, Receiving> receiving)
    {
        if (!counted.isEmpty()) {
            counted.retainAll(receiving.keySet());
        }
        for (Receiving session : receiving.values()) {
            if (session.token() == Receiving.UNKNOWN && !counted.contains(session.id()) && partlyLoaded(session.id())) {
                counted.add(session.id());
                sessions++;
            }
        }
    }

    private boolean partlyLoaded(String id)
    {
        boolean anyLoaded = false;
        for (String layer : layerNames) {
            anyLoaded |= consumer.layerLoaded(id, layer);
        }
        if (!anyLoaded) {
            return false;
        }
        for (String layer : layerNames) {
            if (!consumer.layerLoaded(id, layer)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Returns the sessions seen with some layers loaded and others not yet, since the decoder started.
     *
     * @return the count.
     */
    long sessions()
    {
        return sessions;
    }
}
