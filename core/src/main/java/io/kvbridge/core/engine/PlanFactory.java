package io.kvbridge.core.engine;

import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The one place the engine obtains transfer plans. Plans are always built from the consumer's point
 * of view (local = a consumer rank, remote = one producer rank), in both modes: a pull consumer reads
 * along the plan, a push producer writes along the same plan with the roles of the lists swapped, so
 * both sides agree on who moves which bytes.
 *
 * <p>Entries: regions pair by position when both sides list the same layers in the same order;
 * otherwise each producer region pairs with the consumer region holding exactly the same layers (a
 * pipeline stage of a per-layer layout). Layer-name routing of pooled layouts plugs in here.
 *
 * <p>Entries whose regions lie in different memory (host or device, and which device) go into
 * separate plans, one per pairing of memories, because one transfer moves one kind of memory.
 */
final class PlanFactory
{
    List<TransferPlan> plans(CacheGeometry consumer, CacheGeometry producer)
    {
        List<TransferEntry> entries = entries(consumer, producer);
        Map<String, List<TransferEntry>> byMemory = new LinkedHashMap<>();
        for (TransferEntry entry : entries) {
            Region mine = consumer.regions().get(entry.localRegion());
            Region theirs = producer.regions().get(entry.remoteRegion());
            String key = mine.memoryKind() + "/" + mine.device() + "<-" + theirs.memoryKind() + "/" + theirs.device();
            byMemory.computeIfAbsent(key, ignored -> new ArrayList<>()).add(entry);
        }
        List<TransferPlan> plans = new ArrayList<>(byMemory.size());
        for (List<TransferEntry> part : byMemory.values()) {
            plans.add(TransferPlan.pair(consumer, producer, part));
        }
        return List.copyOf(plans);
    }

    private static List<TransferEntry> entries(CacheGeometry consumer, CacheGeometry producer)
    {
        List<Region> local = consumer.regions();
        List<Region> remote = producer.regions();
        if (local.size() == remote.size()) {
            boolean same = true;
            for (int r = 0; r < local.size() && same; r++) {
                same = local.get(r).members().equals(remote.get(r).members());
            }
            if (same) {
                return TransferEntry.byIndex(local.size());
            }
        }
        List<TransferEntry> entries = new ArrayList<>(remote.size());
        for (int p = 0; p < remote.size(); p++) {
            Region theirs = remote.get(p);
            int match = -1;
            for (int c = 0; c < local.size() && match < 0; c++) {
                if (local.get(c).members().equals(theirs.members())) {
                    match = c;
                }
            }
            if (match < 0) {
                throw new KvBridgeException(ErrorCode.ROUTING_FAILED, "producer region " + theirs.name() + " holds layers " + theirs.members()
                        + " but no consumer region holds exactly these layers (consumer regions: " + local.size()
                        + "); pooled layouts of different shapes need layer-name routing");
            }
            entries.add(new TransferEntry(match, p));
        }
        return entries;
    }
}
