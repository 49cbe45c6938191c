package io.kvbridge.core.engine;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.QuarantinedBlocks;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The failed requests of one consumer rank whose blocks a writer may still reach, because nothing
 * proved its writes stopped: push writers whose grant revoke proves nothing
 * ({@link io.kvbridge.spi.transfer.WriteStop#AFTER_PROOF}, or a revoke that failed), and pull READs
 * that linger ({@link InFlightTransfers}). A request leaves only on proof: each such writer's
 * completion or failure message (a producer sends either only once its write moves no byte), and
 * each lingering READ's end. Worker thread only, except {@link #count()}.
 */
final class Quarantines
{
    private static final Logger LOG = LoggerFactory.getLogger(Quarantines.class);
    private static final long EXIT_SCAN_NANOS = 100_000_000L;

    /** Where a release is reported; entering is reported by the caller, with the request's failure. */
    interface Reports
    {
        void released(QuarantinedBlocks blocks);
    }

    private final String name;
    private final Reports reports;
    // consumer request id -> quarantined requests under it (an id may be reused once reported)
    private final Map<String, List<ReceivingRequest>> byId = new HashMap<>();
    private final AtomicInteger count = new AtomicInteger();
    // while a request is quarantined: when to ask the transport next whether an unproven writer's process exited
    private long nextExitScan;

    Quarantines(String name, Reports reports)
    {
        this.name = name;
        this.reports = reports;
    }

    /**
     * Quarantines a failed request's blocks that its unproven writers may reach, if any.
     *
     * @param writers agents of push writers whose writes are not proven stopped.
     * @param writerGroups the groups those writers write, as a mask.
     * @param lingeringGroups the groups the request's lingering READs write, as a mask.
     * @param lingering whether a READ of the request lingers.
     * @return the quarantined blocks, or null when nothing is unproven.
     */
    QuarantinedBlocks enter(ReceivingRequest request, Set<String> writers, long writerGroups, long lingeringGroups, boolean lingering)
    {
        if (writers.isEmpty() && !lingering) {
            return null;
        }
        BlockIds blocks = InvalidBlocks.ofGroups(request.ids, writerGroups | lingeringGroups);
        String reason = (writers.isEmpty() ? "" : "producer ranks " + writers + " may still write (the transport's revoke does not prove their "
                + "writes stopped); released on each one's completion or failure message")
                + (writers.isEmpty() || !lingering ? "" : "; ")
                + (lingering ? "a READ still runs (the transport's release does not prove it stopped); released when it ends" : "");
        request.unprovenWriters.addAll(writers);
        request.quarantine = new QuarantinedBlocks(request.id, blocks, reason);
        byId.computeIfAbsent(request.id, ignored -> new ArrayList<>(1)).add(request);
        count.incrementAndGet();
        LOG.warn("{}: request {} quarantines blocks {}: {}", name, request.id, blocks, reason);
        return request.quarantine;
    }

    /** A writer of a quarantined request said its write ended (completion or failure): proof for that writer. */
    void acknowledged(String requestId, String sender, Predicate<ReceivingRequest> lingers)
    {
        List<ReceivingRequest> under = byId.get(requestId);
        if (under == null) {
            return;
        }
        for (ReceivingRequest request : List.copyOf(under)) {
            if (request.unprovenWriters.remove(sender)) {
                releaseIfProven(request, lingers.test(request));
            }
        }
    }

    /** {@return when {@link #scanExits} is next due; {@code Long.MAX_VALUE} while nothing is quarantined} */
    long nextExitScan()
    {
        return count() == 0 ? Long.MAX_VALUE : nextExitScan;
    }

    /**
     * While anything is quarantined, at most every 100 ms: {@link #proveExited},
     * since a writer that never answers is proven stopped only by its process's end, if the transport
     * can tell.
     */
    void scanExits(long now, Function<String, String> exited, Predicate<ReceivingRequest> lingers)
    {
        if (count() > 0 && now - nextExitScan >= 0) {
            nextExitScan = now + EXIT_SCAN_NANOS;
            proveExited(exited, lingers);
        }
    }

    /**
     * Asks the transport, for each unproven writer of every quarantined request, whether that
     * writer's process exited; an exited writer is proven stopped, its proof named in the release.
     */
    void proveExited(Function<String, String> exited, Predicate<ReceivingRequest> lingers)
    {
        for (List<ReceivingRequest> under : List.copyOf(byId.values())) {
            for (ReceivingRequest request : List.copyOf(under)) {
                for (String writer : List.copyOf(request.unprovenWriters)) {
                    String proof = exited.apply(writer);
                    if (proof != null) {
                        request.unprovenWriters.remove(writer);
                        request.proofs.add("producer rank " + writer + ": " + proof);
                        releaseIfProven(request, lingers.test(request));
                    }
                }
            }
        }
    }

    /** {@return whether a request with this id is quarantined} */
    boolean holds(String requestId)
    {
        return byId.containsKey(requestId);
    }

    /** Releases a quarantined request once no writer of it and no READ of it is unproven. */
    void releaseIfProven(ReceivingRequest request, boolean lingering)
    {
        if (request.quarantine == null || lingering || !request.unprovenWriters.isEmpty()) {
            return;
        }
        List<ReceivingRequest> under = byId.get(request.id);
        if (under == null || !under.remove(request)) {
            return;
        }
        if (under.isEmpty()) {
            byId.remove(request.id);
        }
        count.decrementAndGet();
        String proof = request.proofs.isEmpty() ? "every writer proved it stopped (its completion or failure message; a READ's end)"
                : "every writer proved it stopped; " + String.join("; ", request.proofs);
        request.proofs.clear();
        LOG.info("{}: request {} releases its quarantined blocks {}: {}", name, request.id, request.quarantine.blocks(), proof);
        reports.released(new QuarantinedBlocks(request.id, request.quarantine.blocks(), proof));
        request.quarantine = null;
    }

    /** {@return the requests quarantined now; any thread} */
    int count()
    {
        return count.get();
    }
}
