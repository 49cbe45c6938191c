package io.kvbridge.core.engine;

import io.kvbridge.api.QuarantinedBlocks;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What a consumer rank's {@link io.kvbridge.api.ConsumerConnector#poll} hands the engine: requests
 * received, requests failed with the blocks they quarantine, and quarantined blocks released. The
 * worker adds; the engine's thread drains. A failure and its quarantine are added under one lock,
 * so that they reach the engine in the same batch. An empty poll allocates nothing.
 */
final class ReceiveReports
{
    private final ConcurrentLinkedQueue<String> received = new ConcurrentLinkedQueue<>();
    // failures and quarantine reports: added and drained under their own lock, so a failure and its quarantine share a batch
    private final List<ReceiveFailure> failed = new ArrayList<>();
    private final List<QuarantinedBlocks> quarantined = new ArrayList<>();
    private final List<QuarantinedBlocks> released = new ArrayList<>();
    private volatile boolean pending;

    void received(String requestId)
    {
        received.add(requestId);
    }

    /** Adds a failed request, and the blocks it quarantines (null when none), to the same batch. */
    void failed(ReceiveFailure failure, QuarantinedBlocks quarantine)
    {
        synchronized (failed) {
            failed.add(failure);
            if (quarantine != null) {
                quarantined.add(quarantine);
            }
            pending = true;
        }
    }

    void released(QuarantinedBlocks blocks)
    {
        synchronized (failed) {
            released.add(blocks);
            pending = true;
        }
    }

    /** Drains everything added so far into one batch; each request reported drops its tracker. */
    ReceiveBatch poll(ConcurrentHashMap<String, RequestTracker> trackers)
    {
        if (received.isEmpty() && !pending) {
            return ReceiveBatch.EMPTY;
        }
        List<String> done = new ArrayList<>();
        String id;
        while ((id = received.poll()) != null) {
            done.add(id);
            RequestTracker.reported(trackers, id);
        }
        List<ReceiveFailure> failures;
        List<QuarantinedBlocks> quarantinedNow;
        List<QuarantinedBlocks> releasedNow;
        synchronized (failed) {
            failures = List.copyOf(failed);
            quarantinedNow = List.copyOf(quarantined);
            releasedNow = List.copyOf(released);
            failed.clear();
            quarantined.clear();
            released.clear();
            pending = false;
        }
        for (ReceiveFailure failure : failures) {
            RequestTracker.reported(trackers, failure.requestId());
        }
        return new ReceiveBatch(done, failures, quarantinedNow, releasedNow);
    }
}
