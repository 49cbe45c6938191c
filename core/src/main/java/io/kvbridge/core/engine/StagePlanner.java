package io.kvbridge.core.engine;

import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.engine.ReceivingRequest.Stage;
import io.kvbridge.core.planner.TpPlan;
import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.core.wire.PeerCapability;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Region;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * How a consumer rank routes a request over its producer's pipeline stages: which producer
 * tensor-parallel ranks it addresses, which stage holds which of its layers (by name, so stages
 * that pool layers into other regions still match), and how many decoder ranks each producer rank
 * waits for. Worker-confined, like the rank that owns it.
 */
final class StagePlanner
{
    private final String name;
    private final CacheGeometry geometry;
    // null, or the whole model's spec, which decoder pipeline stages need
    private final ModelCacheSpec spec;
    private final LayoutRules rules;
    private final PeerLinks links;

    StagePlanner(String name, CacheGeometry geometry, ModelCacheSpec spec, LayoutRules rules, PeerLinks links)
    {
        this.name = name;
        this.geometry = geometry;
        this.spec = spec;
        this.rules = rules;
        this.links = links;
    }

    /** The producer tensor-parallel ranks a rank addresses in every stage; they depend on the sizes only. */
    List<Integer> targets(int producerTp)
    {
        return TpPlan.compute(geometry.rank().tpRank(), geometry.rank().tpSize(), producerTp, 1, true).handshakeTargets();
    }

    /**
     * The producer ranks a request shakes hands with, by the side channel serving them: stages that
     * share a side channel share one handshake.
     *
     * @param params the request's parameters.
     * @param targets the producer tensor-parallel ranks addressed in every stage ({@link #targets}).
     * @return the ranks by side channel, in stage order.
     */
    static Map<SideChannelAddress, List<RankKey>> handshakes(TransferParams params, List<Integer> targets)
    {
        Map<SideChannelAddress, List<RankKey>> byAddress = new LinkedHashMap<>();
        for (int stage = 0; stage < params.ppSize(); stage++) {
            List<RankKey> ranks = byAddress.computeIfAbsent(params.sideChannels().get(stage), ignored -> new ArrayList<>());
            for (int target : targets) {
                ranks.add(new RankKey(stage, target));
            }
        }
        return byAddress;
    }

    /**
     * Plans a request once its producer's stages have shaken hands: each stage's transfer plans and
     * how many decoder ranks it waits for, with the layout's checks of every producer rank.
     *
     * @param params the request's parameters.
     * @param mode pull or push.
     * @param engines the handshaken engines by their side channels.
     * @return the stages that hold layers of this rank.
     * @throws KvBridgeException when a producer lacks the mode, disagrees with the parameters or
     *     the layout, or no stage serves some of this rank's layers.
     */
    Stage[] plan(TransferParams params, TransferMode mode, Map<RemoteKey, RemoteEngine> engines)
    {
        List<Integer> targets = targets(params.tpSize());
        PeerCapability wanted = mode == TransferMode.PUSH ? PeerCapability.PUSH : PeerCapability.PULL;
        Set<String> uncovered = new LinkedHashSet<>();
        for (Region region : geometry.regions()) {
            uncovered.addAll(region.members());
        }
        List<Stage> stages = new ArrayList<>(params.ppSize());
        for (int stage = 0; stage < params.ppSize(); stage++) {
            RemoteKey key = new RemoteKey(params.engineId(), params.sideChannels().get(stage));
            RemoteEngine engine = engines.get(key);
            KvBridgeException.check(engine.capabilities().contains(wanted), ErrorCode.UNSUPPORTED,
                    "producer %s and this consumer share capabilities %s, not %s", params.engineId(), PeerCapability.wireNames(engine.capabilities()),
                    wanted.wireName());
            for (int target : targets) {
                // the layout's own check, before any list of the peer is prepared or a transfer posted
                RankKey rank = new RankKey(stage, target);
                rules.checkPeer(engine.metadata(rank).geometry(), "producer " + params.engineId() + " rank " + rank, name);
            }
            RankKey first = new RankKey(stage, targets.getFirst());
            CacheGeometry producer = engine.metadata(first).geometry();
            KvBridgeException.check(producer.rank().tpSize() == params.tpSize() && producer.rank().ppSize() == params.ppSize(),
                    ErrorCode.GEOMETRY_INCOMPATIBLE, "producer %s advertises rank %s but the transfer parameters say tpSize=%d ppSize=%d",
                    params.engineId(), producer.rank(), params.tpSize(), params.ppSize());
            List<LinkPlan> plans = links.plans(key, first, geometry, producer, true);
            if (plans.isEmpty()) {
                // this producer stage owns none of this rank's layers: it neither writes nor expects this rank
                continue;
            }
            for (LinkPlan plan : plans) {
                for (TransferEntry entry : plan.plan().entries()) {
                    if (entry.layer().isEmpty()) {
                        uncovered.removeAll(entry.local().members());
                    }
                    else {
                        uncovered.remove(entry.layer());
                    }
                }
            }
            int consumers = plans.getFirst().tpPlan().localConsumers() * decoderStagesSharing(producer);
            stages.add(new Stage(stage, key, engine, targets, plans, consumers));
        }
        if (!uncovered.isEmpty()) {
            throw new KvBridgeException(ErrorCode.ROUTING_FAILED, "no stage of producer " + params.engineId() + " serves local layers " + uncovered
                    + " of rank " + geometry.rank() + ": they would be left stale");
        }
        return stages.toArray(Stage[]::new);
    }

    /**
     * How many stages of this consumer engine hold layers of a producer stage: every rank of each
     * addresses the producer rank, which waits for all of them. One without pipeline stages here;
     * otherwise counted from this engine's cache spec (checked present at start).
     */
    private int decoderStagesSharing(CacheGeometry producer)
    {
        if (spec == null || spec.ppSize() == 1) {
            return 1;
        }
        Set<String> producerLayers = PlanFactory.held(producer);
        int sharing = 0;
        for (int stage = 0; stage < spec.ppSize(); stage++) {
            for (LayerSpec layer : spec.layersOfStage(stage)) {
                if (producerLayers.contains(layer.name())) {
                    sharing++;
                    break;
                }
            }
        }
        return sharing;
    }
}
