package io.kvbridge.core.engine;

import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.core.routing.Routing;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Region;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The one place the engine obtains transfer plans. Plans are always built from the consumer's point
 * of view (local = a consumer rank, remote = one producer rank), in both modes: a pull consumer reads
 * along the plan, a push producer writes along the same plan with the roles of the lists swapped, so
 * both sides agree on who moves which bytes.
 *
 * <p>Entries come from {@link Routing}: when the producer rank holds every layer the consumer rank
 * holds, {@link Routing#route} pairs regions by position where that is exact and by layer name
 * otherwise (pools that differ, packed MLA rows, a consumer stage against a whole producer). When the
 * producer rank is one pipeline stage holding only some of them, only the layers both hold are
 * routed, by name; the result is empty when they share none, and that stage does not exchange with
 * this consumer rank.
 *
 * <p>Entries whose regions lie in different memory (host or device, and which device) go into
 * separate plans, one per pairing of memories, because one transfer moves one kind of memory.
 */
final class PlanFactory
{
    private final ModelCacheSpec spec;

    /** @param spec the rank's cache spec, or null to read the layers off the geometries. */
    PlanFactory(ModelCacheSpec spec)
    {
        this.spec = spec;
    }

    /** Returns the plans, one per memory pairing; empty when the ranks share no layer. */
    List<TransferPlan> plans(CacheGeometry consumer, CacheGeometry producer)
    {
        List<TransferEntry> entries = entries(consumer, producer);
        Map<String, List<TransferEntry>> byMemory = new LinkedHashMap<>();
        for (TransferEntry entry : entries) {
            Region mine = entry.local();
            Region theirs = entry.remote();
            String key = mine.memoryKind() + "/" + mine.device() + "<-" + theirs.memoryKind() + "/" + theirs.device();
            byMemory.computeIfAbsent(key, ignored -> new ArrayList<>()).add(entry);
        }
        List<TransferPlan> plans = new ArrayList<>(byMemory.size());
        for (List<TransferEntry> part : byMemory.values()) {
            plans.add(TransferPlan.pair(consumer, producer, part));
        }
        return List.copyOf(plans);
    }

    private List<TransferEntry> entries(CacheGeometry consumer, CacheGeometry producer)
    {
        List<LayerSpec> layers = layers(consumer, producer);
        if (held(producer).containsAll(held(consumer))) {
            return Routing.route(layers, consumer, producer).entries();
        }
        return Routing.sharedLayers(layers, consumer, producer);
    }

    /** Every layer a rank holds. */
    static Set<String> held(CacheGeometry geometry)
    {
        Set<String> held = new HashSet<>();
        for (Region region : geometry.regions()) {
            held.addAll(region.members());
        }
        return held;
    }

    /**
     * The model's layers: from the cache spec when the settings carry one; otherwise read off the
     * side that holds the whole model, which works when every region names its one cache group
     * (per-layer and MLA layouts), not when pools overlay several groups.
     */
    private List<LayerSpec> layers(CacheGeometry consumer, CacheGeometry producer)
    {
        if (spec != null) {
            return spec.layers();
        }
        CacheGeometry whole = held(consumer).size() == consumer.model().layerCount() ? consumer
                : held(producer).size() == producer.model().layerCount() ? producer : null;
        if (whole == null) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "neither consumer rank " + consumer.rank() + " nor producer rank " + producer.rank()
                    + " holds all layerCount=" + consumer.model().layerCount() + " layers, so the model's layer order is unknown; pass the cache spec "
                    + "with ConnectorSettings.Builder.cacheSpec");
        }
        for (CacheGeometry side : List.of(consumer, producer)) {
            for (Region region : side.regions()) {
                if (region.groupId() < 0) {
                    throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "region " + region.name() + " of rank " + side.rank()
                            + " overlays several cache groups (groupId=-1), so its layers' groups are unknown; pass the cache spec with "
                            + "ConnectorSettings.Builder.cacheSpec");
                }
            }
        }
        List<LayerSpec> layers = new ArrayList<>();
        for (Region region : whole.regions()) {
            for (String layer : region.members()) {
                layers.add(new LayerSpec(layer, region.groupId()));
            }
        }
        return layers;
    }
}
