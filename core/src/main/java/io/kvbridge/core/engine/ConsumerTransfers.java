package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.PullKey;
import io.kvbridge.api.RequestState;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.engine.ReceivingRequest.Stage;
import io.kvbridge.core.engine.ReceivingRequest.Writer;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a consumer rank sends for a request once it is planned: the READs of a pull (with the
 * completions attached, or parked until every part of a split read succeeded) or the registrations
 * of a push, over the rank's links to the producer ranks. How a request ends stays with the rank
 * ({@link Ends}). Worker thread only.
 */
final class ConsumerTransfers
{
    private static final Logger LOG = LoggerFactory.getLogger(ConsumerTransfers.class);

    // what a registration that only frees a replica carries instead of a grant key
    private static final byte[] NO_KEY = new byte[0];

    /** How a request ends, which the consumer rank decides. */
    interface Ends
    {
        /** Fails a request whose failure leaves {@code groups} undefined; {@code count} counts it as a failed transfer. */
        void fail(ReceivingRequest request, ErrorCode code, String message, boolean count, long groups);

        /** Every part of the request is in place. */
        void received(ReceivingRequest request);
    }

    private final RankRuntime runtime;
    private final RankPeers peers;
    private final PeerLinks links;
    private final String name;
    private final CacheGeometry geometry;
    private final LayoutRules rules;
    private final TransferMetrics metrics;
    private final RequestGrants grants;
    private final Ends ends;
    private final IndexScratch scratch = new IndexScratch();
    private final StreamLayers layers;
    private final PullStreamReader streams;
    // this rank's blocks of a request and the producer's
    private final BlockSelection myBlocks;
    private final BlockSelection theirBlocks;

    ConsumerTransfers(RankRuntime runtime, LayoutRules rules, Ends ends)
    {
        this.runtime = requireNonNull(runtime, "runtime is null");
        this.rules = requireNonNull(rules, "rules is null");
        this.ends = requireNonNull(ends, "ends is null");
        this.peers = runtime.peers();
        this.links = peers.links();
        this.name = runtime.name();
        this.geometry = runtime.settings().geometry();
        this.metrics = runtime.metrics();
        this.grants = runtime.grants();
        this.myBlocks = BlockSelection.forGroups(geometry.groups());
        this.theirBlocks = BlockSelection.forGroups(geometry.groups());
        this.layers = new StreamLayers(geometry);
        this.streams = new PullStreamReader(runtime, rules, layers, this, ends);
    }

    /** {@return the reader of the requests pulled layer by layer} */
    PullStreamReader streams()
    {
        return streams;
    }

    /** {@return the layers this rank holds, by name} */
    StreamLayers layers()
    {
        return layers;
    }

    /** A producer rank that streams says layers of a pushed request landed: they count toward the request's readiness. */
    void layersLanded(ReceivingRequest request, Messages.LayersLanded landed, String sender)
    {
        LayerReadiness readiness = request == null || request.ended ? null : request.tracker.layers;
        String problem = readiness == null ? "the request is not waiting for pushes" : readiness.landed(sender, landed.layers());
        if (problem != null) {
            LOG.warn("{}: dropped landed layers of request {} from {}: {}", name, landed.requestId(), sender, problem);
            return;
        }
        firstData(request);
    }

    /** The hand-over ends when this rank first has data of the request in place (see TransferMetrics). */
    void firstData(ReceivingRequest request)
    {
        // once per request: later completions of the same request look nothing up
        if (request.dataArrived) {
            return;
        }
        request.dataArrived = true;
        RemoteEngine stage0 = request.engines.get(new RemoteKey(request.params.engineId(), request.params.sideChannels().getFirst()));
        if (stage0 != null && request.params.finishedNanos() != TransferParams.UNKNOWN_TIME) {
            metrics.handover(request.mode, runtime.now() - stage0.clockOffset().toLocalNanos(request.params.finishedNanos()));
        }
    }


    /** Posts a planned pull request's READs, or tells every producer rank it may free its blocks when there is nothing to read. */
    void pull(ReceivingRequest request)
    {
        String producerId = request.producerRequestId;
        if (request.exchanged.isEmpty()) {
            // full prefix hit: nothing to read, but every producer rank must hear that it may free its blocks
            for (Stage stage : request.stages) {
                for (int target : stage.targets()) {
                    PeerLink link = links.link(stage.remote(), stage.engine(), new RankKey(stage.ppRank(), target));
                    peers.notifyQuietly(link, Messages.completion(producerId, stage.consumers(), stage.engine().epoch()), "completion");
                }
            }
            ends.received(request);
            return;
        }
        long leaseNanos = TimeUnit.MILLISECONDS.toNanos(request.params.leaseMillis());
        byte[][] pullKeys = new byte[request.stages.length][];
        for (int s = 0; s < request.stages.length; s++) {
            PullKey key = request.params.pullKey(request.stages[s].ppRank());
            if (key.isNone()) {
                ends.fail(request, ErrorCode.NOT_GRANTED, "cannot pull request " + producerId + " from producer " + request.params.engineId()
                        + " stage " + request.stages[s].ppRank() + ": its parameters carry no pull key for that stage (written by a producer"
                        + " that serves no pulls or predates pull keys, or a router dropped the key or did not merge every stage's parameters"
                        + " with TransferParams.withEpochsOf); hand the consumer the parameters the producer returned, or push", true,
                        LayoutRules.ALL_GROUPS);
                return;
            }
            pullKeys[s] = key.bytes();
        }
        int[][] producerIds = new int[request.params.blockIds().groupCount()][];
        for (int g = 0; g < producerIds.length; g++) {
            producerIds[g] = request.params.blockIds().group(g);
        }
        if (request.params.finishedNanos() == TransferParams.UNKNOWN_TIME) {
            // handed over before the prefill finished: each layer is read once its producer rank announces it
            streams.begin(request, pullKeys, producerIds, leaseNanos);
            return;
        }
        for (int s = 0; s < request.stages.length; s++) {
            Stage stage = request.stages[s];
            boolean split = stage.plans().size() > 1;
            Set<Integer> notified = new LinkedHashSet<>();
            Set<Integer> sources = new LinkedHashSet<>();
            byte[] completion = Messages.completion(producerId, stage.consumers(), stage.engine().epoch());
            for (int p = 0; p < stage.plans().size(); p++) {
                LinkPlan plan = stage.plans().get(p);
                long groups = rules.groupsWritten(plan.plan());
                for (int source : plan.tpPlan().sources()) {
                    sources.add(source);
                    RankKey rank = new RankKey(stage.ppRank(), source);
                    CacheGeometry remote = stage.engine().metadata(rank).geometry();
                    int slot = plan.tpPlan().slotOf(source);
                    myBlocks.select(request.ids).expandToKernel(geometry.kernelBlocksPerLogical());
                    theirBlocks.select(producerIds).expandToKernel(remote.kernelBlocksPerLogical());
                    plan.align(myBlocks, theirBlocks);
                    int count = plan.count(slot, myBlocks, theirBlocks);
                    if (count == 0) {
                        continue;
                    }
                    PeerLink link = links.link(stage.remote(), stage.engine(), rank);
                    PeerLink.Prepared mine = plan.mine(link, slot, geometry);
                    PeerLink.Prepared theirs = plan.theirs(link, slot, remote);
                    scratch.ensure(count);
                    int pairs = plan.indices(slot, myBlocks, scratch.mine(), theirBlocks, scratch.theirs());
                    boolean attach = !split && notified.add(source);
                    try {
                        runtime.post(request, TransferOp.READ, link, mine, scratch.mine(), theirs, scratch.theirs(), pairs, attach ? completion : null, pullKeys[s],
                                leaseNanos).groups = groups;
                        request.transfersPosted++;
                    }
                    catch (KvBridgeException e) {
                        // no sibling READ is posted after a failure, and no producer is told the request is done
                        metrics.transferFailed();
                        if (e.code() == ErrorCode.PEER_UNKNOWN) {
                            // the cached peer is gone (closed, or its engine restarted): the next request asks the side channel again
                            peers.peerFailed(stage.remote());
                        }
                        ends.fail(request, e.code(), "posting the READ from producer rank " + rank + " failed: " + e.getMessage(), false,
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
                    peers.notifyQuietly(link, completion, "completion");
                }
            }
        }
        request.posted = true;
        request.deadline = Long.MAX_VALUE;
        request.tracker.deadline(Long.MAX_VALUE);
        request.tracker.state(RequestState.IN_FLIGHT);
        request.tracker.progress(request.transfersDone, request.transfersPosted);
        if (!runtime.hasTransfers(request)) {
            sendParked(request);
            ends.received(request);
        }
    }

    /** Sends the completions a pull request parked until every READ of it succeeded. */
    void sendParked(ReceivingRequest request)
    {
        for (PeerLink link : request.parked) {
            Stage stage = stageOf(request, link);
            peers.notifyQuietly(link, Messages.completion(request.producerRequestId, stage.consumers(), stage.engine().epoch()), "completion");
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

    /** Registers a planned push request's blocks with every producer rank it addresses (or frees the replicas it does not need). */
    void push(ReceivingRequest request)
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
        LayerReadiness readiness = new LayerReadiness(layers);
        for (Stage stage : request.stages) {
            if (stage.plans().size() > 1) {
                throw new KvBridgeException(ErrorCode.UNSUPPORTED, "producer " + request.params.engineId() + " stage " + stage.ppRank()
                        + " keeps its cache in mixed host and device memory: push does not support that, use pull");
            }
            List<Integer> sources = stage.plans().getFirst().tpPlan().sources();
            long groups = rules.groupsWritten(stage.plans().getFirst().plan());
            for (int target : stage.targets()) {
                RankKey rank = new RankKey(stage.ppRank(), target);
                PeerLink link = links.link(stage.remote(), stage.engine(), rank);
                boolean write = !release && sources.contains(target);
                Messages.Registration registration = new Messages.Registration(request.id, request.producerRequestId, runtime.settings().engineId(),
                        runtime.ownAddress().host(), runtime.ownAddress().port(), geometry.rank().ppRank(), geometry.rank().tpRank(), stage.consumers(), write,
                        request.exchanged, stage.engine().epoch(), runtime.epoch(), write ? pushKey : NO_KEY);
                byte[] message = Messages.registration(registration);
                boolean sent = peers.notifyQuietly(link, message, "push registration");
                if (!sent) {
                    // the link's peer may have failed for good (a producer that was stopped): try once more on a new one
                    link = links.reconnect(stage.remote(), stage.engine(), rank);
                    sent = link != null && peers.notifyQuietly(link, message, "push registration");
                }
                if (!sent) {
                    peers.peerFailed(stage.remote());
                }
                if (!sent && write) {
                    ends.fail(request, ErrorCode.TRANSFER_FAILED, "could not send the push registration to producer rank " + rank + " of "
                            + request.params.engineId(), true, LayoutRules.ALL_GROUPS);
                    return;
                }
                if (write) {
                    request.writers.put(link.agent(), new Writer(stage.consumers(), groups, stage.engine().epoch()));
                    readiness.writer(link.agent(), stage.plans().getFirst().plan(), geometry);
                }
            }
        }
        request.posted = true;
        request.tracker.layers = readiness;
        request.tracker.state(RequestState.REGISTERED);
        request.tracker.progress(0, request.writers.size());
        if (request.writers.isEmpty()) {
            ends.received(request);
        }
    }
}
