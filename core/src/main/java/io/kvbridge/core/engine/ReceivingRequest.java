package io.kvbridge.core.engine;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.Leases;
import io.kvbridge.api.QuarantinedBlocks;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.spi.ErrorCode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** A request a {@link ConsumerRank} is receiving; confined to its worker, except the tracker. */
final class ReceivingRequest
{
    /** One producer stage as a request sees it. */
    record Stage(int ppRank, RemoteKey remote, RemoteEngine engine, List<Integer> targets, List<LinkPlan> plans, int consumers)
    {
    }

    /** A producer rank asked to write a push request: the consumers it is told about, the groups it writes, its engine's epoch. */
    record Writer(int consumers, long groups, long epoch)
    {
    }

    final String id;
    final TransferParams params;
    final TransferMode mode;
    // as the engine gave them, and as exchanged (each group's trailing blocks its layout exchanges)
    final BlockIds blocks;
    final BlockIds exchanged;
    final int[][] ids;
    final RequestTracker tracker;
    // the groups whose blocks a failure leaves undefined
    long invalidGroups;
    int transfersPosted;
    int transfersDone;
    final Map<RemoteKey, RemoteEngine> engines = new HashMap<>();
    String producerRequestId;
    int pendingHandshakes;
    Stage[] stages;
    boolean posted;
    // what the producer ranks that push may write here, until the request ends
    long[] grants = new long[0];
    boolean ended;
    // metrics: when the worker took the request, and whether some of its data is in place yet
    long beganNanos;
    boolean dataArrived;
    ErrorCode failure;
    String failureMessage;
    // a digest mismatch: per group, the first exchanged position that differs (-1 for a group that matched); else null
    int[] firstMismatch;
    long deadline;
    long nextHeartbeat;
    final long heartbeatNanos;
    // pull: completions sent once every split READ succeeded
    final List<PeerLink> parked = new ArrayList<>(1);
    // push: writer agent -> what it writes; writers done -> producer request id to acknowledge
    final Map<String, Writer> writers = new LinkedHashMap<>();
    final Map<String, String> writersDone = new HashMap<>();
    // push: writers that reported their write failed, which a producer does only once it moves no byte
    final Set<String> writersStopped = new HashSet<>();
    // after a failure: writers whose writes are not proven stopped, and the blocks they keep from reuse (Quarantines)
    final Set<String> unprovenWriters = new HashSet<>();
    // proofs other than a writer's own message (its process exited), named when the quarantine is released
    final List<String> proofs = new ArrayList<>(0);
    QuarantinedBlocks quarantine;
    // pull of a request handed over before its prefill finished: read layer by layer, else null
    PullStream pullStream;

    ReceivingRequest(String id, TransferParams params, TransferMode mode, BlockIds blocks, LayoutRules rules, RequestTracker tracker)
    {
        this.id = id;
        this.params = params;
        this.mode = mode;
        this.blocks = blocks;
        this.ids = rules.exchangedIds(blocks);
        this.exchanged = LayoutRules.clipped(blocks, ids) ? BlockIds.of(ids) : blocks;
        this.tracker = tracker;
        tracker.blocks(exchanged.total());
        this.producerRequestId = params.requestId();
        this.heartbeatNanos = Leases.heartbeatPeriodNanos(params.leaseMillis());
    }

    /** The groups written by the plans a failed post leaves unposted: this one and every later one. */
    long groupsFrom(LayoutRules rules, int stageIndex, int planIndex)
    {
        long groups = 0;
        for (int s = stageIndex; s < stages.length; s++) {
            List<LinkPlan> plans = stages[s].plans();
            for (int p = s == stageIndex ? planIndex : 0; p < plans.size(); p++) {
                groups |= rules.groupsWritten(plans.get(p).plan());
            }
        }
        return groups;
    }

    /** {@return whether heartbeats apply: the request is planned and names its producer's request} */
    boolean heartbeats()
    {
        return stages != null && !producerRequestId.isEmpty();
    }

    /**
     * Collects the push writers that nothing proves stopped: neither done nor reporting their write
     * failed (a producer sends either only once its write moves no byte).
     *
     * @return the groups those writers write.
     */
    long unprovenWriters(Set<String> into)
    {
        long groups = 0;
        for (Map.Entry<String, Writer> writer : writers.entrySet()) {
            if (!writersDone.containsKey(writer.getKey()) && !writersStopped.contains(writer.getKey())) {
                into.add(writer.getKey());
                groups |= writer.getValue().groups();
            }
        }
        return groups;
    }

    /** {@return what a request past its deadline still waited for: before posting its handshake, after it push's writers} */
    String waitedFor(ConnectorSettings settings)
    {
        return !posted ? "the handshake with producer " + params.engineId() + " did not finish within " + settings.transferTimeout()
                : pullStream != null ? "not every layer was announced computed and read from " + pullStream.unfinished() + " of "
                        + pullStream.sources.length + " producer ranks within registrationTimeout=" + settings.registrationTimeout()
                        + " (set it above the longest prefill)"
                : "no write from " + (writers.size() - writersDone.size()) + " of " + writers.size() + " producer ranks within registrationTimeout="
                        + settings.registrationTimeout();
    }

    /**
     * Marks what a failure leaves undefined: {@code groups} (what the failing part would have
     * written, and every group an in-flight transfer of the request writes: it is cancelled, so
     * possibly half written) and, in push, every group of a writer that has not reported its data in
     * place.
     */
    void invalidate(long groups)
    {
        invalidGroups |= groups | (pullStream == null ? 0 : pullStream.unfinishedGroups());
        for (Map.Entry<String, Writer> writer : writers.entrySet()) {
            if (!writersDone.containsKey(writer.getKey())) {
                invalidGroups |= writer.getValue().groups();
            }
        }
    }
}
