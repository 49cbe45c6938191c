package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.BlockDigests;
import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.Integrity;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.PullKey;
import io.kvbridge.api.RequestState;
import io.kvbridge.api.RequestView;
import io.kvbridge.api.RequestIds;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.ServedRole;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One producer rank. It holds each finished request's blocks under a lease and counts, per request,
 * the distinct consumer ranks that said they are done ({@code <id>:<n>}); at {@code n} the request is
 * complete. A push registration that matches a held request (by producer id, consumer id or base id,
 * whichever of the two arrives second) starts a WRITE into the consumer's blocks along the
 * consumer's plan; the consumer's acknowledgement afterwards is an ordinary completion, so push and
 * pull complete the same way. A request is reported once: completed, expired or aborted, and only
 * when none of its WRITEs can still move data. A request announced with {@code prefillStarted} is held
 * the same way and written layer by layer as the engine announces them ({@link StreamWriter}), or its
 * layers announced to the consumer ranks that pull it ({@link StreamAnnouncer}).
 */
final class ProducerRank implements ProducerConnector, RankRole, ConnectorRank
{
    private static final Logger LOG = LoggerFactory.getLogger(ProducerRank.class);

    // the shared runtime (worker, transport, transfers in flight, peers) this role is run by, and what the role reads of it
    private final RankRuntime runtime;
    final ConnectorSettings settings;
    final CacheGeometry geometry;
    final String name;
    final long epoch;
    private final TransferMetrics metrics;
    private final PeerLinks links;
    private final RequestGrants grants;

    private final long leaseNanos;
    private final long stashNanos;
    private final ProducerStages stages;
    private final PullKeys pullKeys;
    private final int[] logicalCapacity;
    private final Set<String> active = ConcurrentHashMap.newKeySet();
    private final ConcurrentLinkedQueue<FreedRequest> freed = new ConcurrentLinkedQueue<>();
    private final ConcurrentHashMap<String, RequestTracker> trackers = new ConcurrentHashMap<>();
    private final LayoutRules rules;
    // null unless integrity is on: the digests of a request's blocks ride in its parameters
    private final BlockDigester digester;

    // worker-confined
    private final Map<String, HeldRequest> held = new HashMap<>();
    private final Map<String, String> heldByBase = new HashMap<>();
    private final RegistrationStash stash = new RegistrationStash();
    private final Map<String, Long> served = new HashMap<>();
    // requests reported recently: a registration naming one of them arrived too late and is dropped, not stashed
    private final Map<String, Long> ended = new HashMap<>();
    private final List<HeldRequest> finishing = new ArrayList<>();
    private long nextLeaseCheck = Long.MAX_VALUE;
    private long nextStashCheck;
    private final PushWriter writer;
    // the requests streamed layer by layer, from their announcement until reported
    private final LayerStreams streams;
    private final StreamAnnouncer announcer;

    private volatile int auditHeld;
    private volatile int auditStashed;

    ProducerRank(EngineServices services, ConnectorSettings settings, boolean startWorker)
    {
        this.runtime = new RankRuntime(services, settings, ServedRole.PRODUCER, this);
        this.settings = settings;
        this.geometry = settings.geometry();
        this.name = runtime.name();
        this.epoch = runtime.epoch();
        this.metrics = runtime.metrics();
        this.links = runtime.peers().links();
        this.grants = runtime.grants();
        this.leaseNanos = settings.leaseDuration().toNanos();
        this.stashNanos = 2 * Math.max(leaseNanos, settings.registrationTimeout().toNanos());
        this.stages = new ProducerStages(settings, runtime.ownAddress(), epoch);
        this.pullKeys = services.pullKeys(settings.engineId());
        this.logicalCapacity = CallerInputs.logicalCapacities(geometry);
        this.rules = new LayoutRules(settings);
        this.digester = settings.integrity() == Integrity.OFF ? null : new BlockDigester(settings.geometry());
        StreamLayers layers = new StreamLayers(geometry);
        this.streams = new LayerStreams(layers, runtime::wake, geometry.blockTokens() * geometry.kernelBlocksPerLogical(), settings.streamMinTokens());
        this.writer = new PushWriter(runtime, rules, leaseNanos, layers);
        this.announcer = new StreamAnnouncer(runtime, layers, request -> held.get(request.id) == request);
        runtime.start(startWorker);
    }

    @Override
    public TransferParams prefillFinished(String requestId, BlockIds blocks)
    {
        long now = runtime.now();
        return prefillFinished(requestId, blocks, now, now + leaseNanos);
    }

    @Override
    public TransferParams prefillFinished(String requestId, BlockIds blocks, long callerNowNanos, long callerDeadlineNanos)
    {
        return hold(requestId, blocks, callerNowNanos, callerDeadlineNanos, false);
    }

    @Override
    public TransferParams prefillStarted(String requestId, BlockIds blocks)
    {
        KvBridgeException.check(digester == null, ErrorCode.UNSUPPORTED, "request %s: %s streams layers only without integrity digests (integrity=%s),"
                + " since digests need final bytes; report it with prefillFinished", requestId, name, settings.integrity());
        long now = runtime.now();
        return hold(requestId, blocks, now, now + leaseNanos, true);
    }

    @Override
    public void layerComputed(String requestId, String layer)
    {
        streams.layerComputed(requestId, layer);
    }

    @Override
    public void allLayersComputed(String requestId)
    {
        streams.allLayersComputed(requestId);
    }

    private TransferParams hold(String requestId, BlockIds blocks, long callerNowNanos, long callerDeadlineNanos, boolean streamed)
    {
        runtime.checkOpen();
        CallerInputs.checkId(requestId);
        requireNonNull(blocks, "blocks is null");
        CallerInputs.checkBlocks(blocks, logicalCapacity, "producer");
        rules.checkServed(blocks, "producer", name);
        // clocks of other processes are not comparable: only the remaining duration is carried over
        long finished = runtime.now();
        long deadline = finished + Math.max(0, callerDeadlineNanos - callerNowNanos);
        KvBridgeException.checkArgument(active.add(requestId), "request id %s is already held by %s", requestId, name);
        int[][] ids = new int[blocks.groupCount()][];
        for (int g = 0; g < ids.length; g++) {
            ids[g] = blocks.group(g);
        }
        RequestTracker tracker = new RequestTracker(deadline, blocks.total());
        trackers.put(requestId, tracker);
        HeldRequest request = new HeldRequest(requestId, ids, finished, deadline, tracker);
        // a streamed request's blocks are granted before they are final: its consumers read a layer only once it is announced
        PullKey pullKey = settings.modes().contains(TransferMode.PULL) ? pullKeys.of(requestId, leaseNanos) : PullKey.NONE;
        // before the parameters leave: a consumer may read before this rank's worker runs the hold
        request.grants = grants.grantPulls(name, requestId, pullKey, ids);
        request.stream = streamed ? streams.open(requestId, blocks) : null;
        runtime.enqueue(() -> hold(request, blocks.isEmpty()));
        // the blocks are final now: what a consumer receives must digest the same
        BlockDigests digests = digester == null ? BlockDigests.NONE : digester.digest(ids);
        return new TransferParams(settings.engineId(), requestId, stages.addresses(), geometry.rank().tpSize(), geometry.rank().ppSize(), blocks,
                settings.modes(), Math.max(1, settings.leaseDuration().toMillis()), streamed ? TransferParams.UNKNOWN_TIME : finished, stages.epochs(),
                stages.pullKeys(pullKey), digests);
    }

    @Override
    public void abort(String requestId)
    {
        runtime.checkOpen();
        runtime.enqueue(() -> {
            HeldRequest request = held.get(requestId);
            if (request != null) {
                finish(request, FreeReason.ABORTED);
            }
        });
    }

    @Override
    public List<FreedRequest> poll()
    {
        if (freed.isEmpty()) {
            return List.of();
        }
        List<FreedRequest> result = new ArrayList<>();
        FreedRequest next;
        while ((next = freed.poll()) != null) {
            result.add(next);
            RequestTracker.reported(trackers, next.requestId());
        }
        return result;
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
        return runtime.baseAudit(active.size(), auditHeld, auditStashed);
    }

    @Override
    public void publishAudit()
    {
        auditHeld = held.size();
        auditStashed = stash.size();
    }

    private void hold(HeldRequest request, boolean nothingHeld)
    {
        if (nothingHeld) {
            // nothing to read: the blocks are free at once
            request.grants = grants.revoke(request.grants);
            report(request, FreeReason.COMPLETED);
            return;
        }
        held.put(request.id, request);
        request.tracker.state(RequestState.HELD);

        ended.remove(request.id);
        heldByBase.put(RequestIds.baseId(request.id), request.id);
        nextLeaseCheck = Math.min(nextLeaseCheck, request.deadline);
        for (RegistrationStash.Stashed stashed : stash.takeMatching(request.id)) {
            startPush(request, stashed.registration(), stashed.sender());
        }
    }

    @Override
    public void onNotification(String sender, byte[] message)
    {
        switch (Messages.parse(message)) {
            case Messages.Completion completion when completion.epoch() != epoch -> stale(sender, "completion of " + completion.requestId(), completion.epoch());
            case Messages.Heartbeat heartbeat when heartbeat.epoch() != epoch -> stale(sender, "heartbeat", heartbeat.epoch());
            case Messages.Registration registration when registration.epoch() != epoch -> {
                stale(sender, "push registration " + registration.requestId(), registration.epoch());
                writer.refuseStale(registration, sender, epoch);
            }
            case Messages.Completion completion -> completed(completion.requestId(), sender, completion.consumers());
            case Messages.Heartbeat heartbeat -> HeldRequest.heartbeat(held, heartbeat.requestIds(), runtime.now(), leaseNanos);
            case PullMessages.PullWatch watch when watch.registration().epoch() != epoch -> stale(sender, "pull watch", watch.registration().epoch());
            case Messages.Registration registration -> registered(registration, sender);
            case PullMessages.PullWatch watch -> announcer.watch(heldOrQueued(watch.registration().producerRequestId()), watch.registration(), sender);
            case PullMessages.LayersComputed layers -> LOG.warn("{}: dropped computed layers of {} from {}: producers announce them", name,
                    layers.requestId(), sender);
            case Messages.PushDone pushDone -> LOG.warn("{}: dropped a push completion for {} from {}: producers do not receive writes", name,
                    pushDone.requestId(), sender);
            case Messages.LayersLanded landed -> LOG.warn("{}: dropped landed layers of {} from {}: producers do not receive writes", name,
                    landed.requestId(), sender);
            case Messages.PushFailed pushFailed -> LOG.warn("{}: dropped a push failure for {} from {}: producers do not receive writes", name,
                    pushFailed.requestId(), sender);
            case Messages.Malformed malformed -> LOG.warn("{}: dropped a malformed notification from {}: {}", name, sender, malformed.reason());
        }
    }

    /** A consumer still talks to an earlier incarnation of this engine: nothing is freed, extended or written for what it names. */
    private void stale(String sender, String what, long named)
    {
        StaleEpochs.refuse(runtime.peers().sessions(), sender, what, named, settings.engineId(), epoch);
    }

    /** {@return the held request, or null}: a consumer can get here before this worker ran the command its prefill report queued */
    private HeldRequest heldOrQueued(String requestId)
    {
        if (!held.containsKey(requestId) && active.contains(requestId)) {
            runtime.runCommands();
        }
        return held.get(requestId);
    }

    private void completed(String requestId, String sender, int consumers)
    {
        HeldRequest request = heldOrQueued(requestId);
        if (request == null || request.reason != null) {
            // the request completed, expired or was aborted already: the sender may hold stale data
            LOG.info("{}: notification from {} for request {} that is not held (completed, expired or aborted); its blocks may have been reused",
                    name, sender, requestId);
            return;
        }
        if (!request.doneBy.contains(sender)) {
            request.doneBy.add(sender);
        }
        request.expected = consumers;
        request.tracker.progress(request.doneBy.size(), request.expected);
        if (request.doneBy.size() >= request.expected) {
            finish(request, FreeReason.COMPLETED);
        }
    }

    private void registered(Messages.Registration registration, String sender)
    {
        String key = RegistrationStash.key(registration);
        if (served.containsKey(key) || stash.contains(key)) {
            LOG.debug("{}: duplicate push registration {} from {} ignored", name, key, sender);
            return;
        }
        HeldRequest request = null;
        if (!registration.producerRequestId().isEmpty()) {
            request = held.get(registration.producerRequestId());
        }
        else {
            request = held.get(registration.requestId());
            if (request == null) {
                String id = heldByBase.get(RequestIds.baseId(registration.requestId()));
                request = id == null ? null : held.get(id);
            }
        }
        if (request == null && ended.containsKey(registration.producerRequestId())) {
            LOG.info("{}: dropped push registration {} from {}: request {} already ended (completed, expired or aborted)", name,
                    registration.requestId(), sender, registration.producerRequestId());
            return;
        }
        if (request == null || request.reason != null) {
            stash.put(registration, sender, runtime.now() + stashNanos);
            return;
        }
        startPush(request, registration, sender);
    }

    private void startPush(HeldRequest request, Messages.Registration registration, String sender)
    {
        String key = RegistrationStash.key(registration);
        served.put(key, runtime.now() + stashNanos);
        request.registrations.add(key);
        if (!registration.write()) {
            // this rank holds a replica the consumer does not need: the registration frees it
            completed(request.id, sender, registration.consumers());
            return;
        }
        if (request.failed) {
            LOG.debug("{}: request {} had a failed write; no further write for {}", name, request.id, registration.requestId());
            return;
        }
        SideChannelAddress address = new SideChannelAddress(registration.host(), registration.port());
        RemoteKey remote = new RemoteKey(registration.engineId(), address);
        RankKey rank = new RankKey(registration.ppRank(), registration.tpRank());
        runtime.peers().handshake(remote, List.of(rank), registration.consumerEpoch())
                .whenComplete((engine, failure) -> runtime.enqueue(() -> writer.afterHandshake(held.get(request.id) == request, request, registration, remote,
                        rank, engine, failure)));
    }

    @Override
    public void transferDone(Transfer transfer)
    {
        HeldRequest request = (HeldRequest) transfer.owner;
        request.writes.remove(transfer);
        writer.streams().written(request, transfer);
        settle(request);
    }

    @Override
    public void transferFailed(Transfer transfer, ErrorCode code, String message)
    {
        HeldRequest request = (HeldRequest) transfer.owner;
        // a write that lingers may still land: the consumer is told once it stopped (stopped()), so that the message proves it
        HeldRequest.PushTarget target = transfer.lingering ? null : request.writes.remove(transfer);
        if (target != null) {
            writer.tellPushFailed(target, request, code, message);
        }
        request.failed = true;
        LOG.warn("{}: push write of request {} failed ({}): {}; the lease frees its blocks", name, request.id, code.id(), message);
        settle(request);
    }

    @Override
    public void stopped(Transfer transfer, boolean done)
    {
        HeldRequest request = (HeldRequest) transfer.owner;
        HeldRequest.PushTarget target = request.writes.remove(transfer);
        // a write that ended DONE delivered its completion with its data; one that failed says so now, after its last byte
        if (target != null && !done) {
            writer.tellPushFailed(target, request, ErrorCode.TRANSFER_FAILED, "the write was stopped after it failed or passed its deadline");
        }
        settle(request);
    }

    @Override
    public void releasedLate(Transfer transfer)
    {
        HeldRequest request = (HeldRequest) transfer.owner;
        request.writes.remove(transfer);
        settle(request);
    }

    private void finish(HeldRequest request, FreeReason reason)
    {
        if (request.reason != null) {
            return;
        }
        request.reason = reason;
        if (reason != FreeReason.COMPLETED) {
            // nobody waits for these writes any more: stop them before the blocks are freed
            runtime.cancelTransfers(request);
        }
        settle(request);
    }

    /** Reports a finishing request once none of its writes can move data any more. */
    private void settle(HeldRequest request)
    {
        if (request.reason == null && request.writes.isEmpty()) {
            request.tracker.state(RequestState.HELD);
        }
        if (request.reason != null && !runtime.hasTransfers(request)) {
            if (held.remove(request.id) == request) {
                // no consumer reads the blocks once this returns, so the engine may reuse them
                request.grants = grants.revoke(request.grants);
                heldByBase.remove(RequestIds.baseId(request.id), request.id);
                report(request, request.reason);
            }
        }
    }

    private void report(HeldRequest request, FreeReason reason)
    {
        if (reason == FreeReason.COMPLETED) {
            metrics.requestDone(true, request.registrations.isEmpty() ? TransferMode.PULL : TransferMode.PUSH, runtime.now() - request.heldSince);
        }
        ended.put(request.id, runtime.now() + stashNanos);
        // a consumer may use the same request id again for a new request once this one ended
        for (String key : request.registrations) {
            served.remove(key);
        }
        active.remove(request.id);
        if (request.stream != null) {
            streams.ended(request.id);
            writer.streams().ended(request);
            announcer.ended(request);
        }
        // terminal before the report is queued, so that the poll handing it out drops the tracker
        request.tracker.state(RequestTracker.terminal(reason));
        freed.add(new FreedRequest(request.id, reason));
    }

    @Override
    public long nextTimerNanos()
    {
        return nextLeaseCheck == Long.MAX_VALUE || nextStashCheck - nextLeaseCheck < 0 ? nextStashCheck : nextLeaseCheck;
    }

    @Override
    public void tick(long now)
    {
        writer.streams().announced(streams);
        announcer.announced();
        if (now - nextLeaseCheck >= 0) {
            long next = HeldRequest.expired(held.values(), now, finishing);
            nextLeaseCheck = next;
            for (HeldRequest request : finishing) {
                metrics.leaseExpired();
                LOG.info("{}: lease of request {} expired ({} of {} consumer ranks finished); freeing its blocks", name, request.id,
                        request.doneBy.size(), request.expected == 0 ? "?" : request.expected);
                finish(request, FreeReason.EXPIRED);
            }
            finishing.clear();
        }
        if (now - nextStashCheck >= 0) {
            nextStashCheck = now + Math.min(stashNanos, 1_000_000_000L);
            for (RegistrationStash.Stashed stashed : stash.takeExpired(now)) {
                LOG.info("{}: dropped push registration {} of consumer {}: no prefill with that id finished", name,
                        stashed.registration().requestId(), stashed.registration().engineId());
            }
            served.values().removeIf(expiry -> now - expiry >= 0);
            ended.values().removeIf(expiry -> now - expiry >= 0);
        }
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
