package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.PullKey;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.RequestState;
import io.kvbridge.api.RequestView;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.core.engine.ReceivingRequest.Stage;
import io.kvbridge.core.engine.ReceivingRequest.Writer;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
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
final class ConsumerRank extends RankWorker implements ConsumerConnector
{
    private static final Logger LOG = LoggerFactory.getLogger(ConsumerRank.class);
    // what a registration that only frees a replica carries instead of a grant key
    private static final byte[] NO_KEY = new byte[0];

    private final int[] logicalCapacity;
    private final Set<String> active = ConcurrentHashMap.newKeySet();
    private final ConcurrentLinkedQueue<String> received = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<ReceiveFailure> failed = new ConcurrentLinkedQueue<>();
    private final ConcurrentHashMap<String, RequestTracker> trackers = new ConcurrentHashMap<>();
    private final LayoutRules rules;
    private final StagePlanner stagePlanner;

    // worker-confined
    private final Map<String, ReceivingRequest> requests = new HashMap<>();
    private final BlockSelection localBlocks;
    private final BlockSelection remoteBlocks;
    private long nextScan = Long.MAX_VALUE;

    ConsumerRank(EngineServices services, ConnectorSettings settings, boolean startWorker)
    {
        KvBridgeException.check(settings.geometry().rank().ppSize() == 1 || settings.cacheSpec() != null, ErrorCode.CONFIG_INVALID,
                "consumer rank %s is one of %d pipeline stages but its settings carry no cache spec, so the producer ranks cannot be told how many "
                        + "decoder ranks address them; pass it with ConnectorSettings.Builder.cacheSpec", settings.geometry().rank(),
                settings.geometry().rank().ppSize());
        super(services, settings, "consumer");
        this.logicalCapacity = CallerInputs.logicalCapacities(geometry);
        this.rules = new LayoutRules(settings);
        this.stagePlanner = new StagePlanner(name, geometry, settings.cacheSpec(), rules, links);
        this.localBlocks = new BlockSelection(geometry.groups().size());
        this.remoteBlocks = new BlockSelection(geometry.groups().size());
        start(startWorker);
    }

    @Override
    public void blocksAllocated(String requestId, TransferParams params, TransferMode mode, BlockIds blocks)
    {
        checkOpen();
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
        enqueue(() -> begin(request));
    }

    @Override
    public ReceiveBatch poll()
    {
        if (received.isEmpty() && failed.isEmpty()) {
            return ReceiveBatch.EMPTY;
        }
        List<String> done = new ArrayList<>();
        List<ReceiveFailure> failures = new ArrayList<>();
        String id;
        while ((id = received.poll()) != null) {
            done.add(id);
            RequestTracker.reported(trackers, id);
        }
        ReceiveFailure failure;
        while ((failure = failed.poll()) != null) {
            failures.add(failure);
            RequestTracker.reported(trackers, failure.requestId());
        }
        return new ReceiveBatch(done, failures);
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
        return baseAudit(active.size(), 0, 0);
    }

    @Override
    void publishAudit()
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
        long now = now();
        request.beganNanos = now;
        request.deadline = now + (request.mode == TransferMode.PUSH ? settings.registrationTimeout() : settings.transferTimeout()).toNanos();
        request.tracker.deadline(request.deadline);
        request.nextHeartbeat = now + request.heartbeatNanos;
        nextScan = Math.min(nextScan, Math.min(request.deadline, request.nextHeartbeat));
        TransferParams params = request.params;
        List<Integer> targets;
        try {
            targets = stagePlanner.targets(params.tpSize());
        }
        catch (KvBridgeException e) {
            fail(request, e.code(), e.getMessage(), true);
            return;
        }
        Map<SideChannelAddress, List<RankKey>> byAddress = new LinkedHashMap<>();
        for (int stage = 0; stage < params.ppSize(); stage++) {
            List<RankKey> ranks = byAddress.computeIfAbsent(params.sideChannels().get(stage), ignored -> new ArrayList<>());
            for (int target : targets) {
                ranks.add(new RankKey(stage, target));
            }
        }
        request.pendingHandshakes = byAddress.size();
        for (Map.Entry<SideChannelAddress, List<RankKey>> entry : byAddress.entrySet()) {
            RemoteKey key = new RemoteKey(params.engineId(), entry.getKey());
            // stages sharing a side channel name one epoch (the parameters check it): the first one's
            long expected = params.epoch(entry.getValue().getFirst().ppRank());
            handshake(key, entry.getValue(), expected)
                    .whenComplete((engine, failure) -> enqueue(() -> handshaken(request, key, expected, engine, failure)));
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
            heartbeatsBegin(request);
            if (request.mode == TransferMode.PULL) {
                pull(request);
            }
            else {
                push(request);
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

    private void pull(ReceivingRequest request)
    {
        String producerId = request.producerRequestId;
        if (request.exchanged.isEmpty()) {
            // full prefix hit: nothing to read, but every producer rank must hear that it may free its blocks
            for (Stage stage : request.stages) {
                for (int target : stage.targets()) {
                    PeerLink link = links.link(stage.remote(), stage.engine(), new RankKey(stage.ppRank(), target));
                    notifyQuietly(link, Messages.completion(producerId, stage.consumers(), stage.engine().epoch()), "completion");
                }
            }
            receivedAll(request);
            return;
        }
        long leaseNanos = TimeUnit.MILLISECONDS.toNanos(request.params.leaseMillis());
        byte[][] pullKeys = new byte[request.stages.length][];
        for (int s = 0; s < request.stages.length; s++) {
            PullKey key = request.params.pullKey(request.stages[s].ppRank());
            if (key.isNone()) {
                fail(request, ErrorCode.NOT_GRANTED, "cannot pull request " + producerId + " from producer " + request.params.engineId()
                        + " stage " + request.stages[s].ppRank() + ": its parameters carry no pull key for that stage (written by a producer"
                        + " that serves no pulls or predates pull keys, or a router dropped the key or did not merge every stage's parameters"
                        + " with TransferParams.withEpochsOf); hand the consumer the parameters the producer returned, or push", true);
                return;
            }
            pullKeys[s] = key.bytes();
        }
        int[][] producerIds = new int[request.params.blockIds().groupCount()][];
        for (int g = 0; g < producerIds.length; g++) {
            producerIds[g] = request.params.blockIds().group(g);
        }
        for (int s = 0; s < request.stages.length; s++) {
            Stage stage = request.stages[s];
            boolean split = stage.plans().size() > 1;
            Set<Integer> notified = new LinkedHashSet<>();
            Set<Integer> sources = new LinkedHashSet<>();
            byte[] completion = Messages.completion(producerId, stage.consumers(), stage.engine().epoch());
            for (int p = 0; p < stage.plans().size(); p++) {
                TransferPlan plan = stage.plans().get(p);
                long groups = rules.groupsWritten(plan);
                for (int source : plan.tpPlan().sources()) {
                    sources.add(source);
                    RankKey rank = new RankKey(stage.ppRank(), source);
                    CacheGeometry remote = stage.engine().metadata(rank).geometry();
                    int slot = plan.tpPlan().slotOf(source);
                    localBlocks.select(request.ids).expandToKernel(geometry.kernelBlocksPerLogical());
                    remoteBlocks.select(producerIds).expandToKernel(remote.kernelBlocksPerLogical());
                    plan.alignBlocks(localBlocks, remoteBlocks);
                    int count = plan.indexCount(slot, localBlocks);
                    if (count == 0) {
                        continue;
                    }
                    PeerLink link = links.link(stage.remote(), stage.engine(), rank);
                    PeerLink.Prepared local = link.mine(p, slot, () -> plan.localDescriptors(slot));
                    PeerLink.Prepared theirs = link.theirs(p, 0, () -> plan.remoteDescriptors(remote));
                    ensureScratch(count);
                    int pairs = plan.indices(slot, localBlocks, scratchA, remoteBlocks, scratchB);
                    boolean attach = !split && notified.add(source);
                    try {
                        post(request, TransferOp.READ, link, local, scratchA, theirs, scratchB, pairs, attach ? completion : null, pullKeys[s],
                                leaseNanos).groups = groups;
                        request.transfersPosted++;
                    }
                    catch (KvBridgeException e) {
                        // no sibling READ is posted after a failure, and no producer is told the request is done
                        metrics.transferFailed();
                        if (e.code() == ErrorCode.PEER_UNKNOWN) {
                            // the cached peer is gone (closed, or its engine restarted): the next request asks the side channel again
                            peerFailed(stage.remote());
                        }
                        fail(request, e.code(), "posting the READ from producer rank " + rank + " failed: " + e.getMessage(), false,
                                request.groupsFrom(rules, s, p));
                        return;
                    }
                }
            }
            for (int target : stage.targets()) {
                if (notified.contains(target)) {
                    continue;
                }
                PeerLink link = links.link(stage.remote(), stage.engine(), new RankKey(stage.ppRank(), target));
                if (sources.contains(target)) {
                    // read in several parts (mixed memory) or not at all: told once every READ succeeded
                    request.parked.add(link);
                    notified.add(target);
                }
                else {
                    // a replica (MLA) or a duplicate head (GQA) this rank does not read: free it now
                    notifyQuietly(link, completion, "completion");
                }
            }
        }
        request.posted = true;
        request.deadline = Long.MAX_VALUE;
        request.tracker.deadline(Long.MAX_VALUE);
        request.tracker.state(RequestState.IN_FLIGHT);
        request.tracker.progress(request.transfersDone, request.transfersPosted);
        if (!hasTransfers(request)) {
            sendParked(request);
            receivedAll(request);
        }
    }

    private void sendParked(ReceivingRequest request)
    {
        for (PeerLink link : request.parked) {
            Stage stage = stageOf(request, link);
            notifyQuietly(link, Messages.completion(request.producerRequestId, stage.consumers(), stage.engine().epoch()), "completion");
        }
        request.parked.clear();
    }

    private Stage stageOf(ReceivingRequest request, PeerLink link)
    {
        for (Stage stage : request.stages) {
            if (stage.ppRank() == link.rank().ppRank() && stage.remote().equals(link.remote())) {
                return stage;
            }
        }
        throw new IllegalStateException(name + ": parked link " + link + " belongs to no stage of request " + request.id);
    }

    private void push(ReceivingRequest request)
    {
        boolean release = request.exchanged.isEmpty();
        byte[] pushKey = release ? NO_KEY : RequestGrants.pushKey();
        if (!release) {
            int[][] exchanged = new int[request.exchanged.groupCount()][];
            for (int g = 0; g < exchanged.length; g++) {
                exchanged[g] = request.exchanged.group(g);
            }
            // the producer ranks that write may reach these blocks and nothing else, until the request ends here
            request.grants = grants.grant(pushKey, TransferOp.WRITE, exchanged);
        }
        for (Stage stage : request.stages) {
            if (stage.plans().size() > 1) {
                throw new KvBridgeException(ErrorCode.UNSUPPORTED, "producer " + request.params.engineId() + " stage " + stage.ppRank()
                        + " keeps its cache in mixed host and device memory: push does not support that, use pull");
            }
            List<Integer> sources = stage.plans().getFirst().tpPlan().sources();
            long groups = rules.groupsWritten(stage.plans().getFirst());
            for (int target : stage.targets()) {
                RankKey rank = new RankKey(stage.ppRank(), target);
                PeerLink link = links.link(stage.remote(), stage.engine(), rank);
                boolean write = !release && sources.contains(target);
                Messages.Registration registration = new Messages.Registration(request.id, request.producerRequestId, settings.engineId(),
                        ownAddress.host(), ownAddress.port(), geometry.rank().ppRank(), geometry.rank().tpRank(), stage.consumers(), write,
                        request.exchanged, stage.engine().epoch(), epoch, write ? pushKey : NO_KEY);
                byte[] message = Messages.registration(registration);
                boolean sent = notifyQuietly(link, message, "push registration");
                if (!sent) {
                    // the link's peer may have failed for good (a producer that was stopped): try once more on a new one
                    link = links.reconnect(stage.remote(), stage.engine(), rank);
                    sent = link != null && notifyQuietly(link, message, "push registration");
                }
                if (!sent) {
                    peerFailed(stage.remote());
                }
                if (!sent && write) {
                    fail(request, ErrorCode.TRANSFER_FAILED, "could not send the push registration to producer rank " + rank + " of "
                            + request.params.engineId(), true);
                    return;
                }
                if (write) {
                    request.writers.put(link.agent(), new Writer(stage.consumers(), groups, stage.engine().epoch()));
                }
            }
        }
        request.posted = true;
        request.tracker.state(RequestState.REGISTERED);
        request.tracker.progress(0, request.writers.size());
        if (request.writers.isEmpty()) {
            receivedAll(request);
        }
    }

    @Override
    void onNotification(String sender, byte[] message)
    {
        switch (Messages.parse(message)) {
            case Messages.PushDone done when done.epoch() != epoch -> stale(sender, "push completion of " + done.requestId(), done.epoch());
            case Messages.PushFailed pushFailed when pushFailed.epoch() != epoch -> stale(sender, "push failure of " + pushFailed.requestId(),
                    pushFailed.epoch());
            case Messages.PushDone done -> pushDone(done, sender);
            case Messages.PushFailed pushFailed -> pushFailed(pushFailed, sender);
            case Messages.Malformed malformed -> LOG.warn("{}: dropped a malformed notification from {}: {}", name, sender, malformed.reason());
            default -> LOG.warn("{}: dropped a notification from {} that only producers handle", name, sender);
        }
    }

    /** A producer answers a registration of an earlier incarnation of this engine: that request is not this one's. */
    private void stale(String sender, String what, long named)
    {
        StaleEpochs.refuse(sessions, sender, what, named, settings.engineId(), epoch);
    }

    private void pushDone(Messages.PushDone done, String sender)
    {
        ReceivingRequest request = requests.get(done.requestId());
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
        firstData(request);
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
                notifyQuietly(link, Messages.completion(writer.getValue(), asked.consumers(), asked.epoch()), "acknowledgement");
            }
        }
        receivedAll(request);
    }

    private void pushFailed(Messages.PushFailed failure, String sender)
    {
        ReceivingRequest request = requests.get(failure.requestId());
        if (request == null || request.ended || request.mode != TransferMode.PUSH || !request.writers.containsKey(sender)) {
            LOG.info("{}: push failure from {} for request {}, which is not waiting for that producer rank; ignored: {}", name, sender,
                    failure.requestId(), failure.reason());
            return;
        }
        // the failing writer is not done, so its groups are among the unfinished writers' that fail() marks
        fail(request, failure.code(), failure.reason(), true, 0);
    }

    @Override
    void transferDone(Transfer transfer)
    {
        ReceivingRequest request = (ReceivingRequest) transfer.owner;
        request.transfersDone++;
        firstData(request);
        request.tracker.progress(request.transfersDone, request.transfersPosted);
        settle(request);
    }

    @Override
    void transferFailed(Transfer transfer, ErrorCode code, String message)
    {
        fail((ReceivingRequest) transfer.owner, code, message, false, transfer.groups);
    }

    @Override
    void releasedLate(Transfer transfer)
    {
        settle((ReceivingRequest) transfer.owner);
    }

    /** Reports a request once none of its transfers is in flight or retained: received when all succeeded, else its failure. */
    private void settle(ReceivingRequest request)
    {
        if (hasTransfers(request)) {
            return;
        }
        if (request.failure != null) {
            reportFailure(request);
        }
        else if (!request.ended && request.posted) {
            sendParked(request);
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
        request.invalidate(groups | transfers.groupsWritten(request));
        request.ended = true;
        request.failure = code;
        request.failureMessage = message;
        request.parked.clear();
        if (count) {
            metrics.transferFailed();
        }
        LOG.warn("{}: request {} failed ({}): {}", name, request.id, code.id(), message);
        cancelTransfers(request);
        if (!hasTransfers(request)) {
            reportFailure(request);
        }
    }

    private void reportFailure(ReceivingRequest request)
    {
        if (requests.remove(request.id) == request) {
            request.grants = grants.revoke(request.grants);
            active.remove(request.id);
            request.tracker.state(RequestState.FAILED);
            failed.add(InvalidBlocks.failure(request.id, request.failure, request.failureMessage, request.blocks, request.ids, request.invalidGroups,
                    settings.failurePolicy()));
        }
    }

    /** The hand-over ends when this rank first has data of the request in place (see TransferMetrics). */
    private void firstData(ReceivingRequest request)
    {
        // once per request: later completions of the same request look nothing up
        if (request.dataArrived) {
            return;
        }
        request.dataArrived = true;
        RemoteEngine stage0 = request.engines.get(new RemoteKey(request.params.engineId(), request.params.sideChannels().getFirst()));
        if (stage0 != null && request.params.finishedNanos() != TransferParams.UNKNOWN_TIME) {
            metrics.handover(request.mode, now() - stage0.clockOffset().toLocalNanos(request.params.finishedNanos()));
        }
    }

    private void receivedAll(ReceivingRequest request)
    {
        request.ended = true;
        metrics.requestDone(false, request.mode, now() - request.beganNanos);
        if (requests.remove(request.id) == request) {
            request.grants = grants.revoke(request.grants);
            active.remove(request.id);
            request.tracker.state(RequestState.COMPLETED);
            received.add(request.id);
        }
    }

    @Override
    long nextTimerNanos()
    {
        return nextScan;
    }

    @Override
    void tick(long now)
    {
        if (now - nextScan < 0) {
            return;
        }
        long next = Long.MAX_VALUE;
        Map<PeerLink, List<String>> heartbeats = null;
        Map<PeerLink, Long> epochs = null;
        for (ReceivingRequest request : List.copyOf(requests.values())) {
            if (request.ended) {
                continue;
            }
            if (now - request.deadline >= 0) {
                String what = !request.posted ? "the handshake with producer " + request.params.engineId() + " did not finish within "
                        + settings.transferTimeout()
                        : "no write from " + (request.writers.size() - request.writersDone.size()) + " of " + request.writers.size()
                                + " producer ranks within registrationTimeout=" + settings.registrationTimeout();
                // before posting nothing is known; after it, push marks the writers that did not report
                fail(request, ErrorCode.DEADLINE_EXCEEDED, what, true, request.posted ? 0 : LayoutRules.ALL_GROUPS);
                continue;
            }
            boolean beats = request.heartbeats();
            if (beats && now - request.nextHeartbeat >= 0) {
                request.nextHeartbeat = now + request.heartbeatNanos;
                if (heartbeats == null) {
                    heartbeats = new HashMap<>();
                    epochs = new HashMap<>();
                }
                for (Stage stage : request.stages) {
                    for (int target : stage.targets()) {
                        PeerLink link = links.link(stage.remote(), stage.engine(), new RankKey(stage.ppRank(), target));
                        heartbeats.computeIfAbsent(link, ignored -> new ArrayList<>()).add(request.producerRequestId);
                        epochs.put(link, stage.engine().epoch());
                    }
                }
            }
            // a heartbeat that does not apply yet is not a timer: counting it would make every scan due at once
            next = Math.min(next, beats ? Math.min(request.deadline, request.nextHeartbeat) : request.deadline);
        }
        nextScan = next;
        if (heartbeats != null) {
            for (Map.Entry<PeerLink, List<String>> entry : heartbeats.entrySet()) {
                notifyQuietly(entry.getKey(), Messages.heartbeat(epochs.get(entry.getKey()), entry.getValue()), "heartbeat");
            }
        }
    }
}
