package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.QuarantinedBlocks;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.RegistrationWatchdog;
import io.kvbridge.api.RequestState;
import io.kvbridge.api.RequestView;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.engine.ReceivingRequest.Writer;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.core.sidechannel.ServedRole;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One consumer rank. For each request it shakes hands with the producer engine (every stage, the
 * tensor-parallel ranks its plan addresses), then either READs from every source rank with the
 * completion notification attached (pull), or registers its blocks with every producer rank that
 * writes to it (push) and waits for their completions, acknowledging each writer once all arrived.
 * A request ends exactly once: received, or failed with its invalid blocks; a failure cancels the
 * request's other transfers and is reported only once none of them can still write its blocks.
 */
final class ConsumerRank implements ConsumerConnector, RankRole, ConnectorRank
{
    private static final Logger LOG = LoggerFactory.getLogger(ConsumerRank.class);

    // the shared runtime (worker, transport, transfers in flight, peers) this role is run by, and what the role reads of it
    private final RankRuntime runtime;
    final ConnectorSettings settings;
    final CacheGeometry geometry;
    final String name;
    final long epoch;
    private final TransferMetrics metrics;
    private final PeerLinks links;
    private final RequestGrants grants;

    private final int[] logicalCapacity;
    private final Set<String> active = ConcurrentHashMap.newKeySet();
    private final ReceiveReports reports = new ReceiveReports();
    private final ConcurrentHashMap<String, RequestTracker> trackers = new ConcurrentHashMap<>();
    private final LayoutRules rules;
    private final StagePlanner stagePlanner;
    private final ConsumerTransfers transfers;
    private final DigestCheck digests;
    private final Quarantines quarantines;
    private final ConsumerHeartbeats heartbeats;

    // worker-confined
    private final Map<String, ReceivingRequest> requests = new HashMap<>();
    private long nextScan = Long.MAX_VALUE;

    ConsumerRank(EngineServices services, ConnectorSettings settings, boolean startWorker)
    {
        KvBridgeException.check(settings.geometry().rank().ppSize() == 1 || settings.cacheSpec() != null, ErrorCode.CONFIG_INVALID,
                "consumer rank %s is one of %d pipeline stages but its settings carry no cache spec, so the producer ranks cannot be told how many "
                        + "decoder ranks address them; pass it with ConnectorSettings.Builder.cacheSpec", settings.geometry().rank(),
                settings.geometry().rank().ppSize());
        this.runtime = new RankRuntime(services, settings, ServedRole.CONSUMER, this);
        this.settings = settings;
        this.geometry = settings.geometry();
        this.name = runtime.name();
        this.epoch = runtime.epoch();
        this.metrics = runtime.metrics();
        this.links = runtime.peers().links();
        this.grants = runtime.grants();
        this.logicalCapacity = CallerInputs.logicalCapacities(geometry);
        this.rules = new LayoutRules(settings);
        this.stagePlanner = new StagePlanner(name, geometry, settings.cacheSpec(), rules, links);
        this.digests = new DigestCheck(name, geometry, settings.integrity());
        this.transfers = new ConsumerTransfers(runtime, rules, new ConsumerTransfers.Ends()
        {
            @Override
            public void fail(ReceivingRequest request, ErrorCode code, String message, boolean count, long groups)
            {
                ConsumerRank.this.fail(request, code, message, count, groups);
            }

            @Override
            public void received(ReceivingRequest request)
            {
                receivedAll(request);
            }
        });
        this.quarantines = new Quarantines(name, reports::released);
        this.heartbeats = new ConsumerHeartbeats(links, runtime.peers());
        runtime.start(startWorker);
    }

    @Override
    public void blocksAllocated(String requestId, TransferParams params, TransferMode mode, BlockIds blocks)
    {
        runtime.checkOpen();
        CallerInputs.checkId(requestId);
        requireNonNull(params, "params is null");
        requireNonNull(mode, "mode is null");
        requireNonNull(blocks, "blocks is null");
        KvBridgeException.checkArgument(settings.modes().contains(mode), "mode=%s is not enabled on %s (modes=%s)", mode, name, settings.modes());
        KvBridgeException.checkArgument(params.modes().contains(mode), "mode=%s is not served by producer %s (modes=%s)", mode, params.engineId(),
                params.modes());
        if (mode == TransferMode.PULL) {
            CallerInputs.checkId(params.requestId());
        }
        else if (!params.requestId().isEmpty()) {
            CallerInputs.checkId(params.requestId());
        }
        CallerInputs.checkBlocks(blocks, logicalCapacity, "consumer");
        rules.checkServed(blocks, "consumer", name);
        RequestTracker tracker = new RequestTracker(Long.MAX_VALUE, blocks.total());
        ReceivingRequest request = new ReceivingRequest(requestId, params, mode, blocks, rules, tracker);
        KvBridgeException.checkArgument(active.add(requestId), "request id %s is already being received by %s", requestId, name);
        trackers.put(requestId, tracker);
        runtime.enqueue(() -> begin(request));
    }

    @Override
    public boolean layerLoaded(String requestId, String layer)
    {
        return LayerReadiness.loaded(trackers, transfers.layers(), requestId, layer);
    }

    @Override
    public ReceiveBatch poll()
    {
        return reports.poll(trackers);
    }

    @Override
    public boolean inspect(String requestId, RequestView into)
    {
        requireNonNull(requestId, "requestId is null");
        requireNonNull(into, "into is null");
        return RequestTracker.inspect(trackers, requestId, into);
    }

    @Override
    public ConnectorAudit audit()
    {
        return runtime.baseAudit(active.size(), 0, 0, quarantines.count());
    }

    @Override
    public void publishAudit()
    {
        // the caller-visible set of active ids is the audit; nothing else to publish
    }

    /** Tells whether a request's transfers were posted or its registrations sent; for a rank stepped by hand on the calling thread. */
    boolean registered(String requestId)
    {
        ReceivingRequest request = requests.get(requestId);
        return request != null && request.posted;
    }

    private void begin(ReceivingRequest request)
    {
        requests.put(request.id, request);
        long now = runtime.now();
        request.beganNanos = now;
        request.deadline = request.mode == TransferMode.PUSH ? RegistrationWatchdog.deadlineNanos(now, settings.registrationTimeout())
                : now + settings.transferTimeout().toNanos();
        request.tracker.deadline(request.deadline);
        request.nextHeartbeat = now + request.heartbeatNanos;
        nextScan = Math.min(nextScan, Math.min(request.deadline, request.nextHeartbeat));
        TransferParams params = request.params;
        DigestCheck.Failure unavailable = digests.unavailable(request.id, params, request.ids);
        if (unavailable != null) {
            fail(request, unavailable.code(), unavailable.message(), true);
            return;
        }
        List<Integer> targets;
        try {
            targets = stagePlanner.targets(params.tpSize());
        }
        catch (KvBridgeException e) {
            fail(request, e.code(), e.getMessage(), true);
            return;
        }
        Map<SideChannelAddress, List<RankKey>> byAddress = StagePlanner.handshakes(params, targets);
        request.pendingHandshakes = byAddress.size();
        for (Map.Entry<SideChannelAddress, List<RankKey>> entry : byAddress.entrySet()) {
            RemoteKey key = new RemoteKey(params.engineId(), entry.getKey());
            // stages sharing a side channel name one epoch (the parameters check it): the first one's
            long expected = params.epoch(entry.getValue().getFirst().ppRank());
            runtime.peers().handshake(key, entry.getValue(), expected)
                    .whenComplete((engine, failure) -> runtime.enqueue(() -> handshaken(request, key, expected, engine, failure)));
        }
    }

    private void handshaken(ReceivingRequest request, RemoteKey key, long expectedEpoch, RemoteEngine engine, Throwable failure)
    {
        if (request.ended) {
            return;
        }
        if (failure != null) {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            fail(request, ErrorCode.HANDSHAKE_FAILED, "handshake with producer " + request.params.engineId() + " failed: " + cause.getMessage(), true);
            return;
        }
        if (expectedEpoch != TransferParams.UNKNOWN_EPOCH && engine.epoch() != expectedEpoch) {
            // the producer restarted after it issued the parameters: the blocks they name are not held by the process now serving
            fail(request, ErrorCode.STALE_EPOCH, StaleEpochs.producerRestarted(request.params.engineId(), engine.address(), engine.servedAt(), expectedEpoch,
                    engine.epoch()), true);
            return;
        }
        request.engines.put(key, engine);
        if (--request.pendingHandshakes > 0) {
            return;
        }
        try {
            request.stages = stagePlanner.plan(request.params, request.mode, request.engines);
            StagePlanner.checkServed(request.stages, request.ids);
            heartbeatsBegin(request);
            if (request.mode == TransferMode.PULL) {
                transfers.pull(request);
            }
            else {
                transfers.push(request);
            }
        }
        catch (KvBridgeException e) {
            fail(request, e.code(), e.getMessage(), true);
        }
    }

    /** Heartbeats are due from now on where the request names its producer's request: the next scan sends them. */
    private void heartbeatsBegin(ReceivingRequest request)
    {
        if (request.heartbeats()) {
            nextScan = Math.min(nextScan, request.nextHeartbeat);
        }
    }

    @Override
    public void onNotification(String sender, byte[] message)
    {
        switch (Messages.parse(message)) {
            case Messages.PushDone done when done.epoch() != epoch -> stale(sender, "push completion of " + done.requestId(), done.epoch());
            case Messages.PushFailed pushFailed when pushFailed.epoch() != epoch -> stale(sender, "push failure of " + pushFailed.requestId(),
                    pushFailed.epoch());
            case Messages.LayersLanded landed when landed.epoch() != epoch -> stale(sender, "landed layers of " + landed.requestId(), landed.epoch());
            case PullMessages.LayersComputed layers when layers.epoch() != epoch -> stale(sender, "computed layers of " + layers.requestId(), layers.epoch());
            case PullMessages.LayersComputed layers -> transfers.streams().announced(requests.get(layers.requestId()), layers, sender);
            case Messages.PushDone done -> pushDone(done, sender);
            case Messages.LayersLanded landed -> transfers.layersLanded(requests.get(landed.requestId()), landed, sender);
            case Messages.PushFailed pushFailed -> pushFailed(pushFailed, sender);
            case Messages.Malformed malformed -> LOG.warn("{}: dropped a malformed notification from {}: {}", name, sender, malformed.reason());
            default -> LOG.warn("{}: dropped a notification from {} that only producers handle", name, sender);
        }
    }

    /** A producer answers a registration of an earlier incarnation of this engine: that request is not this one's. */
    private void stale(String sender, String what, long named)
    {
        StaleEpochs.refuse(runtime.peers().sessions(), sender, what, named, settings.engineId(), epoch);
    }

    private void pushDone(Messages.PushDone done, String sender)
    {
        ReceivingRequest request = requests.get(done.requestId());
        if ((request == null || request.ended) && quarantines.holds(done.requestId())) {
            // its write ended with its data in place: that writer proved it stopped
            quarantines.acknowledged(done.requestId(), sender, runtime::lingers);
            return;
        }
        if (request == null || request.ended || request.mode != TransferMode.PUSH) {
            LOG.info("{}: push completion from {} for request {} that is not waiting (received, failed or unknown); ignored", name, sender,
                    done.requestId());
            return;
        }
        if (!request.writers.containsKey(sender)) {
            LOG.warn("{}: push completion for request {} from {}, which was not asked to write; ignored", name, done.requestId(), sender);
            return;
        }
        request.writersDone.putIfAbsent(sender, done.producerRequestId());
        transfers.firstData(request);
        request.tracker.progress(request.writersDone.size(), request.writers.size());
        if (request.producerRequestId.isEmpty()) {
            request.producerRequestId = done.producerRequestId();
            heartbeatsBegin(request);
        }
        if (request.writersDone.size() < request.writers.size()) {
            return;
        }
        for (Map.Entry<String, String> writer : request.writersDone.entrySet()) {
            PeerLink link = links.byAgent(writer.getKey());
            if (link != null) {
                Writer asked = request.writers.get(writer.getKey());
                runtime.peers().notifyQuietly(link, Messages.completion(writer.getValue(), asked.consumers(), asked.epoch()), "acknowledgement");
            }
        }
        receivedAll(request);
    }

    private void pushFailed(Messages.PushFailed failure, String sender)
    {
        ReceivingRequest request = requests.get(failure.requestId());
        if ((request == null || request.ended) && quarantines.holds(failure.requestId())) {
            // a producer reports a failed write only once it moves no byte: proof for that writer
            quarantines.acknowledged(failure.requestId(), sender, runtime::lingers);
            return;
        }
        if (request == null || request.ended || request.mode != TransferMode.PUSH || !request.writers.containsKey(sender)) {
            LOG.info("{}: push failure from {} for request {}, which is not waiting for that producer rank; ignored: {}", name, sender,
                    failure.requestId(), failure.reason());
            return;
        }
        // the failing writer is not done, so its groups are among the unfinished writers' that fail() marks; its message proves it stopped
        request.writersStopped.add(sender);
        fail(request, failure.code(), failure.reason(), true, 0);
    }

    @Override
    public void transferDone(Transfer transfer)
    {
        ReceivingRequest request = (ReceivingRequest) transfer.owner;
        request.transfersDone++;
        transfers.firstData(request);
        request.tracker.progress(request.transfersDone, request.transfersPosted);
        transfers.streams().readDone(request, transfer);
        settle(request);
    }

    @Override
    public void transferFailed(Transfer transfer, ErrorCode code, String message)
    {
        fail((ReceivingRequest) transfer.owner, code, message, false, transfer.groups);
    }

    @Override
    public void releasedLate(Transfer transfer)
    {
        settle((ReceivingRequest) transfer.owner);
    }

    @Override
    public void stopped(Transfer transfer, boolean done)
    {
        ReceivingRequest request = (ReceivingRequest) transfer.owner;
        quarantines.releaseIfProven(request, runtime.lingers(request));
    }

    /** Reports a request once none of its transfers is in flight or retained: received when all succeeded, else its failure. */
    private void settle(ReceivingRequest request)
    {
        if (runtime.hasTransfers(request)) {
            return;
        }
        if (request.failure != null) {
            reportFailure(request);
        }
        else if (!request.ended && request.posted && (request.pullStream == null || request.pullStream.finished())) {
            transfers.sendParked(request);
            receivedAll(request);
        }
    }

    /** Fails a request where the connector cannot tell which blocks are affected: every group's. */
    private void fail(ReceivingRequest request, ErrorCode code, String message, boolean count)
    {
        fail(request, code, message, count, LayoutRules.ALL_GROUPS);
    }

    /** Fails a request whose failure leaves {@code groups} undefined, and what {@link ReceivingRequest#invalidate} adds. */
    private void fail(ReceivingRequest request, ErrorCode code, String message, boolean count, long groups)
    {
        if (request.ended) {
            return;
        }
        request.invalidate(groups | runtime.groupsInFlight(request));
        request.ended = true;
        request.failure = code;
        request.failureMessage = message;
        request.parked.clear();
        if (count) {
            metrics.transferFailed();
        }
        LOG.warn("{}: request {} failed ({}): {}", name, request.id, code.id(), message);
        runtime.cancelTransfers(request);
        if (!runtime.hasTransfers(request)) {
            reportFailure(request);
        }
    }

    /**
     * Reports a failed request, with the blocks a writer not proven stopped may still reach
     * quarantined in the same batch: push writers that did not finish, unless revoking their grant
     * proves their writes ended, and the request's lingering READs.
     */
    private void reportFailure(ReceivingRequest request)
    {
        if (requests.remove(request.id) == request) {
            boolean revokeProven = grants.revokeWrites(request.grants);
            request.grants = new long[0];
            Set<String> unproven = new HashSet<>();
            long writerGroups = revokeProven ? 0 : request.unprovenWriters(unproven);
            boolean lingering = runtime.lingers(request);
            QuarantinedBlocks quarantine = quarantines.enter(request, unproven, writerGroups, lingering ? runtime.groupsLingering(request) : 0, lingering);
            active.remove(request.id);
            request.tracker.state(RequestState.FAILED);
            ReceiveFailure failure = request.firstMismatch != null
                    ? InvalidBlocks.mismatched(request.id, request.failure, request.failureMessage, request.blocks, request.ids, request.firstMismatch,
                            settings.failurePolicy())
                    : InvalidBlocks.failure(request.id, request.failure, request.failureMessage, request.blocks, request.ids, request.invalidGroups,
                            settings.failurePolicy());
            reports.failed(failure, quarantine);
        }
    }

    private void receivedAll(ReceivingRequest request)
    {
        // the last byte arrived: the engine sees the blocks only if they are the producer's
        DigestCheck.Failure mismatch = digests.verify(request.id, request.params, request.ids);
        if (mismatch != null) {
            request.firstMismatch = mismatch.firstInvalid();
            fail(request, mismatch.code(), mismatch.message(), true, mismatch.groups());
            return;
        }
        request.ended = true;
        metrics.requestDone(false, request.mode, runtime.now() - request.beganNanos);
        if (requests.remove(request.id) == request) {
            request.grants = grants.revoke(request.grants);
            active.remove(request.id);
            request.tracker.state(RequestState.COMPLETED);
            reports.received(request.id);
        }
    }

    @Override
    public long nextTimerNanos()
    {
        return Math.min(nextScan, quarantines.nextExitScan());
    }

    @Override
    public void tick(long now)
    {
        quarantines.scanExits(now, runtime.transport()::writerExited, runtime::lingers);
        transfers.streams().pump();
        if (now - nextScan < 0) {
            return;
        }
        long next = Long.MAX_VALUE;
        heartbeats.begin();
        for (ReceivingRequest request : List.copyOf(requests.values())) {
            if (request.ended) {
                continue;
            }
            if (now - request.deadline >= 0) {
                // before posting nothing is known; after it, push marks the writers that did not report
                fail(request, ErrorCode.DEADLINE_EXCEEDED, request.waitedFor(settings), true, request.posted ? 0 : LayoutRules.ALL_GROUPS);
                continue;
            }
            boolean beats = request.heartbeats();
            if (beats && now - request.nextHeartbeat >= 0) {
                request.nextHeartbeat = now + request.heartbeatNanos;
                heartbeats.add(request);
            }
            // a heartbeat that does not apply yet is not a timer: counting it would make every scan due at once
            next = Math.min(next, beats ? Math.min(request.deadline, request.nextHeartbeat) : request.deadline);
        }
        nextScan = next;
        heartbeats.send();
    }

    @Override
    public RankRuntime runtime()
    {
        return runtime;
    }

    @Override
    public void close()
    {
        runtime.close();
    }
}
