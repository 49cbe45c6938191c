package io.kvbridge.core.engine;

import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the consumer ranks that pull a streamed request which of its layers are computed, so that
 * they read each layer once it is final. A consumer rank asks with a watch once it has planned the
 * request; the first answer carries every layer computed by then and each later one the layers
 * computed since, so an announcement made before the consumer asked is not lost: the stream keeps
 * it and the first answer carries it. A request that is not streamed is answered at once with all
 * its layers. Worker thread only.
 */
final class StreamAnnouncer
{
    private static final Logger LOG = LoggerFactory.getLogger(StreamAnnouncer.class);
    // consumer ranks of one request that may watch it; more are refused
    static final int MAX_WATCHERS = 256;

    /** A consumer rank that watches a request: where to answer, and what it was told. */
    static final class Watcher
    {
        final PeerLink link;
        final String sender;
        final String consumerRequestId;
        final long consumerEpoch;
        final boolean[] sent;
        int sentCount;
        boolean allSent;

        Watcher(PeerLink link, String sender, String consumerRequestId, long consumerEpoch, int layers)
        {
            this.link = link;
            this.sender = sender;
            this.consumerRequestId = consumerRequestId;
            this.consumerEpoch = consumerEpoch;
            this.sent = new boolean[layers];
        }
    }

    private final RankRuntime runtime;
    private final StreamLayers layers;
    private final Predicate<HeldRequest> stillHeld;
    private final String name;
    // the streamed requests some consumer rank watches
    private final List<HeldRequest> watched = new ArrayList<>();

    StreamAnnouncer(RankRuntime runtime, StreamLayers layers, Predicate<HeldRequest> stillHeld)
    {
        this.runtime = runtime;
        this.layers = layers;
        this.stillHeld = stillHeld;
        this.name = runtime.name();
    }

    /** A consumer rank asks for a request's layers; {@code request} is null when this rank does not hold it. */
    void watch(HeldRequest request, Messages.Registration watch, String sender)
    {
        if (request == null || request.reason != null) {
            dropped(sender, watch, "request " + watch.producerRequestId() + " is not held here (never announced, or it ended)");
            return;
        }
        if (request.stream != null) {
            for (Watcher watcher : request.stream.watchers) {
                if (watcher.sender.equals(sender) && watcher.consumerRequestId.equals(watch.requestId())) {
                    LOG.debug("{}: duplicate pull watch of {} from {} ignored", name, request.id, sender);
                    return;
                }
            }
            if (request.stream.watchers.size() >= MAX_WATCHERS) {
                dropped(sender, watch, MAX_WATCHERS + " consumer ranks watch it already");
                return;
            }
        }
        RemoteKey remote = new RemoteKey(watch.engineId(), new SideChannelAddress(watch.host(), watch.port()));
        RankKey rank = new RankKey(watch.ppRank(), watch.tpRank());
        runtime.peers().handshake(remote, List.of(rank), watch.consumerEpoch())
                .whenComplete((engine, failure) -> runtime.enqueue(() -> afterHandshake(request, watch, sender, remote, rank, engine, failure)));
    }

    private void afterHandshake(HeldRequest request, Messages.Registration watch, String sender, RemoteKey remote, RankKey rank, RemoteEngine engine,
            Throwable failure)
    {
        if (!stillHeld.test(request) || request.reason != null) {
            return;
        }
        if (failure != null || engine.epoch() != watch.consumerEpoch()) {
            // the consumer's deadline fails its request; nothing here waits for it
            dropped(sender, watch, failure != null ? "the handshake with the consumer failed: " + failure.getMessage()
                    : StaleEpochs.consumerRestarted(watch, engine.epoch()));
            return;
        }
        Watcher watcher = new Watcher(runtime.peers().links().link(remote, engine, rank), sender, watch.requestId(), watch.consumerEpoch(), layers.count());
        if (request.stream == null) {
            // every layer is final already
            tell(request, watcher);
            return;
        }
        if (request.stream.watchers.isEmpty()) {
            watched.add(request);
        }
        request.stream.watchers.add(watcher);
        tell(request, watcher);
    }

    /** Tells every watcher what was computed since its last answer; allocates nothing when nothing was. */
    void announced()
    {
        for (int r = 0; r < watched.size(); r++) {
            HeldRequest request = watched.get(r);
            for (int w = 0; w < request.stream.watchers.size(); w++) {
                Watcher watcher = request.stream.watchers.get(w);
                if (watcher.sentCount != request.stream.announcedCount() || request.stream.allComputed() != watcher.allSent) {
                    tell(request, watcher);
                }
            }
        }
    }

    /** Forgets a request that was reported. */
    void ended(HeldRequest request)
    {
        watched.remove(request);
    }

    private void tell(HeldRequest request, Watcher watcher)
    {
        LayerStream stream = request.stream;
        // read before the layers: once all are said computed, every layer bit is set
        boolean all = stream == null || stream.allComputed();
        if (stream != null && stream.whole && !all) {
            // below the streaming threshold the consumer reads the request whole, after all-done
            return;
        }
        List<String> fresh = new ArrayList<>();
        for (int l = 0; l < layers.count(); l++) {
            if (!watcher.sent[l] && (stream == null || stream.isComputed(l))) {
                watcher.sent[l] = true;
                watcher.sentCount++;
                fresh.add(layers.name(l));
            }
        }
        if (fresh.isEmpty() && all == watcher.allSent) {
            return;
        }
        watcher.allSent = all;
        runtime.peers().notifyQuietly(watcher.link, PullMessages.layersComputed(watcher.consumerRequestId, request.id, fresh, all, watcher.consumerEpoch),
                "computed layers");
    }

    private void dropped(String sender, Messages.Registration watch, String why)
    {
        runtime.metrics().announcementDropped();
        LOG.info("{}: dropped pull watch of request {} from {}: {}", name, watch.producerRequestId(), sender, why);
    }
}
