package io.kvbridge.core.routing;

import static io.kvbridge.core.routing.ModelLayers.failure;
import static java.util.Objects.requireNonNull;

import io.kvbridge.api.TransferMode;
import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.Region;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * Routes every pipeline stage of a producer engine to every pipeline stage of a decoder engine by
 * layer name, for stage boundaries that need not line up (producer 15 + 15 layers, decoder 10 + 20):
 * each producer stage moves every layer it owns to or from whichever decoder stage owns it.
 *
 * <p>From the routing follow which (producer stage, decoder stage) pairs exchange data at all and
 * how many completion notifications each side waits for: the sum, over the stages it exchanges
 * with, of the peer ranks that address each of its ranks (in pull {@link
 * io.kvbridge.core.planner.TpPlan#localConsumers()} of each pair's plan, in push the producer ranks
 * that write it, {@link io.kvbridge.core.planner.TpPlan#writersPerRemoteRank()}). Without decode-side
 * pipeline parallelism this is the familiar "producer stages times producers per consumer"; with
 * it, a decoder stage counts only the producer stages that own some of its layers.
 *
 * <p>Everything is checked on construction, before any memory is registered: each engine's stages
 * form one engine, no layer is owned by two stages of one engine, and every layer one engine holds
 * is held by the other. Immutable and thread-safe.
 */
public final class StageExchange
{
    private final TransferMode mode;
    private final List<CacheGeometry> producers;
    private final List<CacheGeometry> decoders;
    private final TransferPlan[][] plans;

    private StageExchange(TransferMode mode, List<CacheGeometry> producers, List<CacheGeometry> decoders, TransferPlan[][] plans)
    {
        this.mode = mode;
        this.producers = producers;
        this.decoders = decoders;
        this.plans = plans;
    }

    /**
     * Routes every producer stage to every decoder stage.
     *
     * @param layers the model's layers in model order, with global names and groups.
     * @param producerStages one geometry per producer stage, in stage order (any one tensor-parallel
     *     rank of each; the plans are this rank's).
     * @param decoderStages one geometry per decoder stage, in stage order.
     * @param mode {@code PUSH}: each plan's local side is the producer stage, which writes;
     *     {@code PULL}: the local side is the decoder stage, which reads.
     * @return the checked exchange.
     * @throws io.kvbridge.spi.KvBridgeException {@code ROUTING_FAILED} naming the layer and the
     *     stages involved, or any error of {@link Routing#plan} for a stage pair.
     */
    public static StageExchange route(List<LayerSpec> layers, List<CacheGeometry> producerStages, List<CacheGeometry> decoderStages, TransferMode mode)
    {
        requireNonNull(mode, "mode is null");
        List<CacheGeometry> producers = stages(producerStages, "producer");
        List<CacheGeometry> decoders = stages(decoderStages, "decoder");
        ModelLayers model = new ModelLayers(layers);
        for (CacheGeometry stage : producers) {
            model.checkDescribes(stage, "producer");
        }
        for (CacheGeometry stage : decoders) {
            model.checkDescribes(stage, "decoder");
        }
        Map<String, Owner> producerLayers = owners(producers, "producer");
        Map<String, Owner> decoderLayers = owners(decoders, "decoder");
        checkCovered(producerLayers, decoderLayers, "producer", "decoder", "the decoder has nowhere to keep it; both engines must serve the same layers");
        checkCovered(decoderLayers, producerLayers, "decoder", "producer", "it would be left stale");

        TransferPlan[][] plans = new TransferPlan[producers.size()][decoders.size()];
        for (int p = 0; p < producers.size(); p++) {
            for (int d = 0; d < decoders.size(); d++) {
                CacheGeometry local = mode == TransferMode.PUSH ? producers.get(p) : decoders.get(d);
                CacheGeometry remote = mode == TransferMode.PUSH ? decoders.get(d) : producers.get(p);
                List<TransferEntry> entries = Routing.sharedLayers(model, local, remote);
                if (!entries.isEmpty()) {
                    plans[p][d] = Routing.checked(TransferPlan.pair(local, remote, entries), mode);
                }
            }
        }
        return new StageExchange(mode, producers, decoders, plans);
    }

    /** Where one engine keeps a layer. */
    private record Owner(int stage, Region region)
    {
    }

    private static List<CacheGeometry> stages(List<CacheGeometry> stages, String engine)
    {
        List<CacheGeometry> copy = List.copyOf(requireNonNull(stages, engine + "Stages is null"));
        if (copy.isEmpty()) {
            throw failure(ErrorCode.ROUTING_FAILED, "no %s stages given (expected: one geometry per pipeline stage, in stage order)", engine);
        }
        CacheGeometry first = copy.getFirst();
        for (int i = 0; i < copy.size(); i++) {
            CacheGeometry stage = copy.get(i);
            if (stage.rank().ppRank() != i || stage.rank().ppSize() != copy.size() || stage.rank().tpSize() != first.rank().tpSize()
                    || !stage.model().equals(first.model())) {
                throw failure(ErrorCode.ROUTING_FAILED, "%s stage list is inconsistent: entry %d is rank %s of model %s, but %d stages were given and entry 0 "
                        + "is rank %s of model %s (expected: entry i is stage i of one engine, ppSize=%d, one tpSize)", engine, i, stage.rank(),
                        stage.model().model(), copy.size(), first.rank(), first.model().model(), copy.size());
            }
        }
        return copy;
    }

    private static Map<String, Owner> owners(List<CacheGeometry> stages, String engine)
    {
        Map<String, Owner> owners = new HashMap<>();
        for (int s = 0; s < stages.size(); s++) {
            for (Region region : stages.get(s).regions()) {
                for (String layer : region.members()) {
                    Owner previous = owners.putIfAbsent(layer, new Owner(s, region));
                    if (previous != null) {
                        throw failure(ErrorCode.ROUTING_FAILED, "layer %s is in %s stage %d (region %s) and in %s stage %d (region %s); the stages of an engine "
                                + "must own disjoint layers", layer, engine, previous.stage(), previous.region().name(), engine, s, region.name());
                    }
                }
            }
        }
        return owners;
    }

    private static void checkCovered(Map<String, Owner> held, Map<String, Owner> other, String engine, String otherEngine, String consequence)
    {
        List<String> missing = held.keySet().stream().filter(layer -> !other.containsKey(layer)).sorted().toList();
        if (!missing.isEmpty()) {
            Owner owner = held.get(missing.getFirst());
            throw failure(ErrorCode.ROUTING_FAILED, "%s stage %d region %s holds layer %s but no %s stage holds it: %s (%d such layers: %s)", engine,
                    owner.stage(), owner.region().name(), missing.getFirst(), otherEngine, consequence, missing.size(), missing);
        }
    }

    /**
     * Returns the transfer mode the plans were made for.
     *
     * @return push or pull.
     */
    public TransferMode mode()
    {
        return mode;
    }

    /**
     * Tells whether two stages exchange data.
     *
     * @param producerStage a producer stage.
     * @param decoderStage a decoder stage.
     * @return true when the producer stage owns a layer the decoder stage holds.
     */
    public boolean exchanges(int producerStage, int decoderStage)
    {
        return cell(producerStage, decoderStage) != null;
    }

    /**
     * Returns the plan of a stage pair.
     *
     * @param producerStage a producer stage.
     * @param decoderStage a decoder stage.
     * @return the checked plan; its local side is the producer in {@code PUSH}, the decoder in {@code PULL}.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} when the stages exchange nothing.
     */
    public TransferPlan plan(int producerStage, int decoderStage)
    {
        TransferPlan plan = cell(producerStage, decoderStage);
        if (plan == null) {
            throw failure(ErrorCode.INVALID_ARGUMENT, "producer stage %d and decoder stage %d share no layer, so they exchange nothing (pairs that do: %s)",
                    producerStage, decoderStage, pairs());
        }
        return plan;
    }

    /**
     * Returns the layers a stage pair moves.
     *
     * @param producerStage a producer stage.
     * @param decoderStage a decoder stage.
     * @return the layers, in the order of the plan's entries; empty when they exchange nothing.
     */
    public List<String> layers(int producerStage, int decoderStage)
    {
        TransferPlan plan = cell(producerStage, decoderStage);
        return plan == null ? List.of() : plan.entries().stream().map(TransferEntry::layer).toList();
    }

    /**
     * Returns the decoder stages a producer stage exchanges with.
     *
     * @param producerStage a producer stage.
     * @return decoder stages in order.
     */
    public List<Integer> decodersOf(int producerStage)
    {
        return partners(producerStage, decoders.size(), true);
    }

    /**
     * Returns the producer stages a decoder stage exchanges with.
     *
     * @param decoderStage a decoder stage.
     * @return producer stages in order.
     */
    public List<Integer> producersOf(int decoderStage)
    {
        return partners(decoderStage, producers.size(), false);
    }

    private List<Integer> partners(int stage, int otherStages, boolean ofProducer)
    {
        List<Integer> partners = new ArrayList<>();
        for (int other = 0; other < otherStages; other++) {
            if (ofProducer ? exchanges(stage, other) : exchanges(other, stage)) {
                partners.add(other);
            }
        }
        return partners;
    }

    /**
     * Returns how many completion notifications each rank of a decoder stage waits for in push:
     * one from every producer rank that writes it ({@link
     * io.kvbridge.core.planner.TpPlan#writersPerRemoteRank()}: 1 when the decoder has at least as
     * many ranks or the blocks are replicated), over every producer stage that owns some of its
     * layers.
     *
     * @param decoderStage a decoder stage.
     * @return the count.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} for a pull exchange.
     */
    public int expectedWriteNotifications(int decoderStage)
    {
        checkMode(TransferMode.PUSH, "expectedWriteNotifications");
        int count = 0;
        for (int producer : producersOf(decoderStage)) {
            // the producer ranks of that stage whose write targets include a decoder rank: its own plan's sources
            count += plans[producer][decoderStage].tpPlan().writersPerRemoteRank();
        }
        return count;
    }

    /**
     * Returns how many read-done notifications each rank of a producer stage waits for in pull
     * before it frees a request's blocks: one from every decoder rank that reads it, over every
     * decoder stage holding some of its layers.
     *
     * @param producerStage a producer stage.
     * @return the count.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} for a push exchange.
     */
    public int expectedReadNotifications(int producerStage)
    {
        checkMode(TransferMode.PULL, "expectedReadNotifications");
        return consumers(decodersOf(producerStage), d -> plans[producerStage][d]);
    }

    /** Sums, over the partner stages, the local ranks of each plan that address one remote rank. */
    private static int consumers(List<Integer> partners, IntFunction<TransferPlan> planWith)
    {
        int count = 0;
        for (int partner : partners) {
            count += planWith.apply(partner).tpPlan().localConsumers();
        }
        return count;
    }

    private void checkMode(TransferMode expected, String method)
    {
        if (mode != expected) {
            throw failure(ErrorCode.INVALID_ARGUMENT, "%s counts %s notifications but the exchange was routed for %s", method, expected, mode);
        }
    }

    private TransferPlan cell(int producerStage, int decoderStage)
    {
        if (producerStage < 0 || producerStage >= producers.size() || decoderStage < 0 || decoderStage >= decoders.size()) {
            throw failure(ErrorCode.INVALID_ARGUMENT, "stage pair (producer %d, decoder %d) is outside [0, %d) x [0, %d)", producerStage, decoderStage,
                    producers.size(), decoders.size());
        }
        return plans[producerStage][decoderStage];
    }

    private List<String> pairs()
    {
        List<String> pairs = new ArrayList<>();
        for (int p = 0; p < producers.size(); p++) {
            for (int d : decodersOf(p)) {
                pairs.add("(" + p + ", " + d + ")");
            }
        }
        return pairs;
    }

    @Override
    public String toString()
    {
        return "StageExchange[" + mode + ", producer stages=" + producers.size() + ", decoder stages=" + decoders.size() + ", pairs=" + pairs() + "]";
    }
}
