package io.kvbridge.core.engine;

import io.kvbridge.api.RequestState;
import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Which layers of a streamed request are in place on a consumer rank: a layer is loaded once every
 * producer rank whose plan writes it said its write of the layer landed (a streamed write carries
 * that notification behind its data), or, in a pull, once this rank's READs of it from every
 * producer rank it reads completed; every layer is loaded once the request was received.
 * The worker records; any thread asks, without allocating.
 */
final class LayerReadiness
{
    private final StreamLayers layers;
    // worker only: per writer (transport agent), the layers its plan writes and those it said landed
    private final Map<String, long[]> expectedBy = new HashMap<>();
    private final Map<String, long[]> landedBy = new HashMap<>();
    private final int[] writersOf;
    private final int[] landedOf;
    private final AtomicLongArray loaded;

    LayerReadiness(StreamLayers layers)
    {
        this.layers = layers;
        this.writersOf = new int[layers.count()];
        this.landedOf = new int[layers.count()];
        this.loaded = new AtomicLongArray((layers.count() + 63) / 64);
    }

    /** Records a producer rank asked to write along a plan from this rank's side, or one a pull reads from; worker only. */
    void writer(String agent, TransferPlan plan, CacheGeometry consumer)
    {
        long[] bits = expectedBy.computeIfAbsent(agent, ignored -> new long[loaded.length()]);
        landedBy.computeIfAbsent(agent, ignored -> new long[loaded.length()]);
        for (TransferEntry entry : plan.entries()) {
            List<String> moved = entry.layer().isEmpty() ? consumer.regions().get(entry.localRegion()).members() : List.of(entry.layer());
            for (String layer : moved) {
                int index = layers.indexOf(layer);
                if (index >= 0 && (bits[index >>> 6] & 1L << index) == 0) {
                    bits[index >>> 6] |= 1L << index;
                    writersOf[index]++;
                }
            }
        }
    }

    /**
     * Records layers a writer says landed; worker only.
     *
     * @return null, or what was wrong with the message (a layer this rank does not hold or the writer does not write, or said twice).
     */
    String landed(String agent, List<String> names)
    {
        long[] expected = expectedBy.get(agent);
        long[] landed = landedBy.get(agent);
        if (expected == null) {
            return "the sender was not asked to write";
        }
        for (String name : names) {
            int index = layers.indexOf(name);
            long bit = index < 0 ? 0 : 1L << index;
            if (index < 0 || (expected[index >>> 6] & bit) == 0 || (landed[index >>> 6] & bit) != 0) {
                return "layer " + name + " is not one the sender writes here, or it said so before";
            }
            landed[index >>> 6] |= bit;
            count(index);
        }
        return null;
    }

    /** Records that one layer a reader expected landed from a producer rank (a pull's READ of it completed); worker only. */
    void landed(String agent, int layer)
    {
        long[] expected = expectedBy.get(agent);
        long[] landed = landedBy.get(agent);
        long bit = 1L << layer;
        if (expected != null && (expected[layer >>> 6] & bit) != 0 && (landed[layer >>> 6] & bit) == 0) {
            landed[layer >>> 6] |= bit;
            count(layer);
        }
    }

    private void count(int layer)
    {
        if (++landedOf[layer] == writersOf[layer]) {
            loaded.set(layer >>> 6, loaded.get(layer >>> 6) | 1L << layer);
        }
    }

    boolean loaded(int layer)
    {
        return (loaded.get(layer >>> 6) & 1L << layer) != 0;
    }

    /**
     * Answers {@code layerLoaded} for any thread, allocating nothing unless it refuses.
     *
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for a request the rank is not receiving or a layer it does not hold.
     */
    static boolean loaded(ConcurrentHashMap<String, RequestTracker> trackers, StreamLayers layers, String requestId, String layer)
    {
        RequestTracker tracker = requestId == null ? null : trackers.get(requestId);
        int index = layers.indexOf(layer);
        if (tracker == null || index < 0) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "request " + requestId + ", layer " + layer + ": "
                    + (tracker == null ? "the request is not being received here (never started, or reported and polled)"
                            : "the layer is not one of this rank's " + layers.names()));
        }
        if (tracker.state() == RequestState.COMPLETED) {
            return true;
        }
        LayerReadiness readiness = tracker.layers;
        return readiness != null && tracker.state() != RequestState.FAILED && readiness.loaded(index);
    }
}
