package io.kvbridge.core.engine;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.RegistrationWatchdog;
import io.kvbridge.api.RequestState;
import io.kvbridge.core.engine.ReceivingRequest.Stage;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pulls requests handed over before their prefill finished, layer by layer: it asks every producer
 * rank it reads from for the request's computed layers (a watch, sent once the request is planned,
 * so that every answer finds it), and reads each plan entry once every layer it moves was
 * announced, never before. A finished read lets the next one go from the role's timer, never from
 * inside the transfer poll. Worker thread only.
 */
final class PullStreamReader
{
    private static final Logger LOG = LoggerFactory.getLogger(PullStreamReader.class);
    private static final byte[] NO_KEY = new byte[0];

    private final RankRuntime runtime;
    private final ConsumerTransfers transfers;
    private final ConsumerTransfers.Ends ends;
    private final CacheGeometry geometry;
    private final StreamLayers layers;
    private final LayoutRules rules;
    private final IndexScratch scratch = new IndexScratch();
    private final BlockSelection myBlocks;
    private final BlockSelection theirBlocks;
    // the requests being pulled layer by layer
    private final List<ReceivingRequest> reading = new ArrayList<>();
    // an announcement arrived or a read ended since the last pump
    private boolean changed;

    PullStreamReader(RankRuntime runtime, LayoutRules rules, StreamLayers layers, ConsumerTransfers transfers, ConsumerTransfers.Ends ends)
    {
        this.transfers = transfers;
        this.runtime = runtime;
        this.rules = rules;
        this.layers = layers;
        this.ends = ends;
        this.geometry = runtime.settings().geometry();
        this.myBlocks = BlockSelection.forGroups(geometry.groups());
        this.theirBlocks = BlockSelection.forGroups(geometry.groups());
    }

    /** Starts pulling a planned request layer by layer: asks its producer ranks for their layers, and frees the replicas it does not read. */
    void begin(ReceivingRequest request, byte[][] pullKeys, int[][] producerIds, long leaseNanos)
    {
        List<PullStream.Source> sources = new ArrayList<>();
        List<byte[]> watches = new ArrayList<>();
        LayerReadiness readiness = new LayerReadiness(layers);
        for (int s = 0; s < request.stages.length; s++) {
            Stage stage = request.stages[s];
            if (stage.plans().size() > 1) {
                throw new KvBridgeException(ErrorCode.UNSUPPORTED, "producer " + request.params.engineId() + " stage " + stage.ppRank()
                        + " keeps its cache in mixed host and device memory: a streamed pull does not support that; hand over the parameters of"
                        + " prefillFinished, or push");
            }
            LinkPlan plan = stage.plans().getFirst();
            byte[] completion = Messages.completion(request.producerRequestId, stage.consumers(), stage.engine().epoch());
            for (int target : stage.targets()) {
                RankKey rank = new RankKey(stage.ppRank(), target);
                PeerLink link = runtime.peers().links().link(stage.remote(), stage.engine(), rank);
                CacheGeometry remote = stage.engine().metadata(rank).geometry();
                int slot = plan.tpPlan().slotOf(target);
                if (slot < 0) {
                    // a replica (MLA) or a duplicate head (GQA) this rank does not read: free it now
                    runtime.peers().notifyQuietly(link, completion, "completion");
                    continue;
                }
                select(request, producerIds, remote, plan);
                if (plan.count(slot, myBlocks, theirBlocks) == 0) {
                    // nothing to read from it: told once the request is received
                    request.parked.add(link);
                    continue;
                }
                sources.add(new PullStream.Source(link, plan, slot, plan.mine(link, slot, geometry), plan.theirs(link, slot, remote), remote, geometry, layers,
                        pullKeys[s], completion, rules.groupsWritten(plan.plan())));
                readiness.writer(link.agent(), plan.plan(), geometry);
                watches.add(PullMessages.watch(new Messages.Registration(request.id, request.producerRequestId, runtime.settings().engineId(),
                        runtime.ownAddress().host(), runtime.ownAddress().port(), geometry.rank().ppRank(), geometry.rank().tpRank(), stage.consumers(), false,
                        BlockIds.empty(), stage.engine().epoch(), runtime.epoch(), NO_KEY)));
            }
        }
        request.pullStream = new PullStream(sources.toArray(PullStream.Source[]::new), producerIds, leaseNanos);
        request.tracker.layers = readiness;
        for (int w = 0; w < watches.size(); w++) {
            PullStream.Source source = request.pullStream.sources[w];
            if (!runtime.peers().notifyQuietly(source.link, watches.get(w), "pull watch")) {
                ends.fail(request, ErrorCode.TRANSFER_FAILED, "could not ask producer rank " + source.link.rank() + " of " + request.params.engineId()
                        + " for the computed layers of request " + request.producerRequestId, true, LayoutRules.ALL_GROUPS);
                return;
            }
        }
        request.posted = true;
        // the layers come as the producer computes them: the decoder waits as long as for a push
        request.deadline = RegistrationWatchdog.deadlineNanos(runtime.now(), runtime.settings().registrationTimeout());
        request.tracker.deadline(request.deadline);
        request.tracker.state(RequestState.REGISTERED);
        if (request.pullStream.finished()) {
            transfers.sendParked(request);
            ends.received(request);
            return;
        }
        reading.add(request);
    }

    /** A producer rank announces computed layers of a request this rank may pull: checked, then read at the next pump. */
    void announced(ReceivingRequest request, PullMessages.LayersComputed message, String sender)
    {
        PullStream.Source source = request == null || request.ended || request.pullStream == null ? null : request.pullStream.byAgent(sender);
        String problem = source == null ? "the request is not pulled layer by layer from that producer rank here"
                : !message.producerRequestId().equals(request.producerRequestId) ? "it names producer request " + message.producerRequestId()
                        : source.announce(message.layers(), message.all());
        if (problem != null) {
            runtime.metrics().announcementDropped();
            LOG.warn("{}: dropped computed layers {} of request {} from {}: {}", runtime.name(), message.layers(), message.requestId(), sender, problem);
            return;
        }
        changed = true;
    }

    /** A read of a streamed request ended well: its layers count as loaded, and the next read may go at the role's next timer. */
    void readDone(ReceivingRequest request, Transfer transfer)
    {
        if (request.pullStream == null) {
            return;
        }
        for (PullStream.Source source : request.pullStream.sources) {
            if (source.inFlight == transfer) {
                source.inFlight = null;
                source.reportLanded(request.tracker.layers);
                changed = true;
                runtime.wake();
            }
        }
    }

    /** Reads what was announced, or a finished read let go, since the last call; allocates nothing when nothing changed. */
    void pump()
    {
        if (!changed) {
            return;
        }
        changed = false;
        for (int r = reading.size() - 1; r >= 0; r--) {
            ReceivingRequest request = reading.get(r);
            if (request.ended || request.pullStream.finished()) {
                reading.remove(r);
                continue;
            }
            for (PullStream.Source source : request.pullStream.sources) {
                if (!pump(request, source)) {
                    break;
                }
            }
        }
    }

    /** {@return false when the request failed} */
    private boolean pump(ReceivingRequest request, PullStream.Source source)
    {
        while (source.inFlight == null && !source.finished) {
            int ready = source.selectReady();
            boolean last = source.allSaid() && !source.othersWait();
            if (ready == 0) {
                if (last) {
                    // everything was read and has landed: nothing left to carry the completion
                    source.finished = true;
                    runtime.peers().notifyQuietly(source.link, source.completion, "completion");
                    if (request.pullStream.finished() && !runtime.hasTransfers(request)) {
                        transfers.sendParked(request);
                        ends.received(request);
                    }
                }
                return true;
            }
            try {
                post(request, source, last);
            }
            catch (KvBridgeException e) {
                runtime.metrics().transferFailed();
                ends.fail(request, e.code(), "posting the READ of announced layers from producer rank " + source.link.rank() + " failed: " + e.getMessage(),
                        false, source.groups);
                return false;
            }
        }
        return true;
    }

    /** Posts the ready entries; an empty part (its groups hold no block) is only marked read. */
    private void post(ReceivingRequest request, PullStream.Source source, boolean last)
    {
        select(request, request.pullStream.producerIds, source.producer, source.plan);
        int count = source.plan.countOf(source.slot, myBlocks, theirBlocks, source.ready);
        if (count == 0) {
            source.markReadyRead();
            source.reportLanded(request.tracker.layers);
            return;
        }
        scratch.ensure(count);
        int pairs = source.plan.indicesOf(source.slot, myBlocks, scratch.mine(), theirBlocks, scratch.theirs(), source.ready, source.scratch);
        Transfer transfer = runtime.post(request, TransferOp.READ, source.link, source.mine, scratch.mine(), source.theirs, scratch.theirs(), pairs,
                last ? source.completion : null, source.pullKey, request.pullStream.leaseNanos);
        transfer.groups = source.groups;
        source.markReadyRead();
        source.inFlight = transfer;
        source.finished = last;
        request.transfersPosted++;
        request.tracker.state(RequestState.IN_FLIGHT);
        request.tracker.progress(request.transfersDone, request.transfersPosted);
    }

    private void select(ReceivingRequest request, int[][] producerIds, CacheGeometry producer, LinkPlan plan)
    {
        myBlocks.select(request.ids).expandToKernel(geometry.kernelBlocksPerLogical());
        theirBlocks.select(producerIds).expandToKernel(producer.kernelBlocksPerLogical());
        plan.align(myBlocks, theirBlocks);
    }
}
