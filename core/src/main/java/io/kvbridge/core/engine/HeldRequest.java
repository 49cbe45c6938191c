package io.kvbridge.core.engine;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.Leases;
import java.util.Collection;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A finished request whose blocks a {@link ProducerRank} holds; confined to its worker, except the tracker. */
final class HeldRequest
{
    static final long[] NO_GRANTS = new long[0];

    /** The consumer rank a write goes to, its id of the request, and its epoch that every notification to it names. */
    record PushTarget(PeerLink link, String consumerRequestId, long consumerEpoch)
    {
    }

    final String id;
    final int[][] blocks;
    final RequestTracker tracker;
    final long heldSince;
    long deadline;
    final List<String> doneBy = new ArrayList<>(2);
    final List<String> registrations = new ArrayList<>(1);
    // each posted write, with whom to tell if it fails
    final Map<Transfer, PushTarget> writes = new HashMap<>(2);
    int expected;
    boolean failed;
    FreeReason reason;
    // what consumers that pull may read, until the blocks are freed
    long[] grants = NO_GRANTS;
    // null unless the request is streamed layer by layer
    LayerStream stream;

    HeldRequest(String id, int[][] blocks, long heldSince, long deadline, RequestTracker tracker)
    {
        this.id = id;
        this.heldSince = heldSince;
        this.blocks = blocks;
        this.deadline = deadline;
        this.tracker = tracker;
    }

    /** Extends the lease on a consumer's heartbeat, as {@link Leases#extendedDeadline} says. */
    void extendLease(long now, long leaseNanos)
    {
        long extended = Leases.extendedDeadline(deadline, now, leaseNanos);
        if (extended != deadline) {
            deadline = extended;
            tracker.deadline(extended);
        }
    }

    /** Extends the leases of the held requests a consumer's heartbeat names. */
    static void heartbeat(Map<String, HeldRequest> held, List<String> requestIds, long now, long leaseNanos)
    {
        for (String id : requestIds) {
            HeldRequest request = held.get(id);
            if (request != null && request.reason == null) {
                request.extendLease(now, leaseNanos);
            }
        }
    }

    /**
     * Collects the requests whose lease expired by {@code now} and are not finishing already.
     *
     * @return the earliest deadline of the others, or Long.MAX_VALUE when none is left.
     */
    static long expired(Collection<HeldRequest> held, long now, List<HeldRequest> into)
    {
        long next = Long.MAX_VALUE;
        into.clear();
        for (HeldRequest request : held) {
            if (request.reason != null) {
                continue;
            }
            if (now - request.deadline >= 0) {
                into.add(request);
            }
            else {
                next = Math.min(next, request.deadline);
            }
        }
        return next;
    }
}
