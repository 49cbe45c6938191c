package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.RequestState;
import io.kvbridge.core.engine.HeldRequest.PushTarget;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a producer rank does with a push registration it matched to a held request once the
 * handshake with the consumer is done: WRITE its blocks into the consumer's along the consumer's
 * plan over the link to that consumer rank, or tell the consumer at once why it will not. Worker
 * thread only.
 */
final class PushWriter
{
    private static final Logger LOG = LoggerFactory.getLogger(PushWriter.class);

    private final RankRuntime runtime;
    private final RankPeers peers;
    private final PeerLinks links;
    private final String name;
    private final ConnectorSettings settings;
    private final CacheGeometry geometry;
    private final LayoutRules rules;
    private final TransferMetrics metrics;
    private final long leaseNanos;
    private final IndexScratch scratch = new IndexScratch();
    // this rank's blocks of a request and the consumer's
    private final BlockSelection myBlocks;
    private final BlockSelection theirBlocks;
    private final StreamWriter streams;

    PushWriter(RankRuntime runtime, LayoutRules rules, long leaseNanos, StreamLayers layers)
    {
        this.runtime = requireNonNull(runtime, "runtime is null");
        this.rules = requireNonNull(rules, "rules is null");
        this.leaseNanos = leaseNanos;
        this.peers = runtime.peers();
        this.links = peers.links();
        this.name = runtime.name();
        this.settings = runtime.settings();
        this.geometry = settings.geometry();
        this.metrics = runtime.metrics();
        this.myBlocks = BlockSelection.forGroups(geometry.groups());
        this.theirBlocks = BlockSelection.forGroups(geometry.groups());
        this.streams = new StreamWriter(runtime, this, layers, leaseNanos);
    }

    /** {@return the writer of the requests streamed layer by layer} */
    StreamWriter streams()
    {
        return streams;
    }

    /**
     * Writes a request to a consumer rank once the handshake with it is done, or says why not.
     *
     * @param stillHeld whether the rank still holds this request (it may have ended during the handshake).
     */
    void afterHandshake(boolean stillHeld, HeldRequest request, Messages.Registration registration, RemoteKey remote, RankKey rank, RemoteEngine engine,
            Throwable failure)
    {
        if (!stillHeld || request.reason != null) {
            LOG.debug("{}: request {} ended before the handshake with consumer {} finished", name, request.id, registration.engineId());
            return;
        }
        if (failure != null) {
            metrics.transferFailed();
            LOG.warn("{}: no push for request {} to consumer {}: {}; the lease frees its blocks", name, request.id, registration.engineId(),
                    failure.getMessage());
            return;
        }
        if (engine.epoch() != registration.consumerEpoch()) {
            // the consumer restarted since it registered: its blocks of this request are gone, and no one waits for the writes
            request.failed = true;
            metrics.transferFailed();
            LOG.warn("{}: no push for request {}: {} ({}); the lease frees its blocks", name, request.id, ErrorCode.STALE_EPOCH.id(),
                    StaleEpochs.consumerRestarted(registration, engine.epoch()));
            return;
        }
        PeerLink link = null;
        try {
            link = links.link(remote, engine, rank);
            write(request, registration, engine, link);
        }
        catch (RuntimeException e) {
            request.failed = true;
            metrics.transferFailed();
            LOG.warn("{}: push of request {} to consumer {} rank {} failed: {}; the lease frees its blocks", name, request.id,
                    registration.engineId(), rank, e.getMessage());
            if (link != null) {
                ErrorCode code = e instanceof KvBridgeException typed ? typed.code() : ErrorCode.TRANSFER_FAILED;
                tellPushFailed(new PushTarget(link, registration.requestId(), registration.consumerEpoch()), request, code, e.getMessage());
            }
        }
    }

    /** A registration of an earlier epoch: where this incarnation can answer (the consumer met it too), the consumer fails at once instead of at its registration timeout. */
    void refuseStale(Messages.Registration registration, String sender, long epoch)
    {
        PeerLink link = links.byAgent(sender);
        if (link != null) {
            String producerId = registration.producerRequestId().isEmpty() ? registration.requestId() : registration.producerRequestId();
            peers.notifyQuietly(link, Messages.pushFailed(registration.requestId(), producerId, ErrorCode.STALE_EPOCH,
                    StaleEpochs.registrationOfEarlierEpoch(settings.engineId(), registration, epoch), registration.consumerEpoch()), "push failure");
        }
    }

    /** Spares the consumer its registration timeout: it learns at once that these writes will not come. */
    void tellPushFailed(PushTarget target, HeldRequest request, ErrorCode code, String message)
    {
        peers.notifyQuietly(target.link(), Messages.pushFailed(target.consumerRequestId(), request.id, code,
                "producer " + settings.engineId() + " rank " + geometry.rank() + " cannot write request " + request.id + ": " + message,
                target.consumerEpoch()), "push failure");
    }

    private void write(HeldRequest request, Messages.Registration registration, RemoteEngine engine, PeerLink link)
    {
        RankKey rank = link.rank();
        CacheGeometry consumer = engine.metadata(rank).geometry();
        rules.checkPeer(consumer, "consumer " + registration.engineId() + " rank " + rank, name);
        List<LinkPlan> plans = links.plans(link.remote(), rank, geometry, consumer, false);
        KvBridgeException.check(!plans.isEmpty(), ErrorCode.PROTOCOL_ERROR, "consumer rank %s asked rank %s to write, but they share no layer", rank,
                geometry.rank());
        if (plans.size() != 1) {
            throw new KvBridgeException(ErrorCode.UNSUPPORTED, "consumer " + registration.engineId() + " rank " + rank
                    + " keeps its cache in mixed host and device memory: push does not support that, use pull");
        }
        LinkPlan plan = plans.getFirst();
        int slot = plan.tpPlan().slotOf(geometry.rank().tpRank());
        if (slot < 0) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "consumer rank " + rank + " asked rank " + geometry.rank()
                    + " to write, but its plan reads from ranks " + plan.tpPlan().sources());
        }
        BlockIds consumerIds = registration.blocks();
        KvBridgeException.check(consumerIds.groupCount() == consumer.groups().size(), ErrorCode.PROTOCOL_ERROR,
                "registration of %s lists %d block groups but the consumer's cache has %d", registration.requestId(), consumerIds.groupCount(),
                consumer.groups().size());
        int[][] consumerArrays = new int[consumerIds.groupCount()][];
        for (int g = 0; g < consumerArrays.length; g++) {
            consumerArrays[g] = consumerIds.group(g);
        }
        theirBlocks.select(consumerArrays).expandToKernel(consumer.kernelBlocksPerLogical());
        myBlocks.select(request.blocks).expandToKernel(geometry.kernelBlocksPerLogical());
        plan.align(myBlocks, theirBlocks);
        byte[] done = Messages.pushDone(registration.requestId(), request.id, registration.consumerEpoch());
        int count = plan.count(slot, myBlocks, theirBlocks);
        if (request.stream != null) {
            // checked whole above; the layers move as the engine announces them
            streams.begin(request, new PushTarget(link, registration.requestId(), registration.consumerEpoch()), plan, slot, consumer, consumerArrays,
                    registration, done);
            return;
        }
        if (count == 0) {
            peers.notifyQuietly(link, done, "push completion");
            return;
        }
        PeerLink.Prepared mine = plan.mine(link, slot, geometry);
        PeerLink.Prepared theirs = plan.theirs(link, slot, consumer);
        scratch.ensure(count);
        int pairs = plan.indices(slot, myBlocks, scratch.mine(), theirBlocks, scratch.theirs());
        Transfer transfer = runtime.post(request, TransferOp.WRITE, link, mine, scratch.mine(), theirs, scratch.theirs(), pairs, done,
                registration.grantKey(), leaseNanos);
        request.writes.put(transfer, new PushTarget(link, registration.requestId(), registration.consumerEpoch()));
        request.tracker.state(RequestState.IN_FLIGHT);
    }
}
