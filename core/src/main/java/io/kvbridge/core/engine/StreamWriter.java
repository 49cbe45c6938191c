package io.kvbridge.core.engine;

import io.kvbridge.api.RequestState;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes streamed requests to the consumer ranks that registered for them: at registration the
 * layers computed so far, then, one write at a time per consumer rank, whatever was computed
 * meanwhile. The write that leaves nothing unwritten after all layers were said computed carries
 * the push completion, so the consumer sees the request received only with every layer in place.
 * Worker thread only.
 */
final class StreamWriter
{
    private static final Logger LOG = LoggerFactory.getLogger(StreamWriter.class);

    private final RankRuntime runtime;
    private final PushWriter writer;
    private final CacheGeometry geometry;
    private final StreamLayers layers;
    private final long leaseNanos;
    private final IndexScratch scratch = new IndexScratch();
    private final BlockSelection myBlocks;
    private final BlockSelection theirBlocks;
    // the streamed requests that have a consumer rank to write to
    private final List<HeldRequest> writing = new ArrayList<>();
    // a write of a streamed request ended since the last announced(): its target may go on
    private boolean writtenSince;

    StreamWriter(RankRuntime runtime, PushWriter writer, StreamLayers layers, long leaseNanos)
    {
        this.runtime = runtime;
        this.writer = writer;
        this.geometry = runtime.settings().geometry();
        this.layers = layers;
        this.leaseNanos = leaseNanos;
        this.myBlocks = BlockSelection.forGroups(geometry.groups());
        this.theirBlocks = BlockSelection.forGroups(geometry.groups());
    }

    /** Starts streaming a request to a consumer rank whose registration matched it; writes what is computed already. */
    void begin(HeldRequest request, HeldRequest.PushTarget push, LinkPlan plan, int slot, CacheGeometry consumer, int[][] consumerBlocks,
            Messages.Registration registration, byte[] done)
    {
        StreamTarget target = new StreamTarget(push, plan, slot, plan.mine(push.link(), slot, geometry), plan.theirs(push.link(), slot, consumer),
                consumer, consumerBlocks, registration.grantKey(), done, geometry, layers);
        if (request.stream.targets.isEmpty()) {
            writing.add(request);
        }
        request.stream.targets.add(target);
        pump(request, target);
    }

    /** Writes what the engine announced, or a finished write let go, since the last call; allocates nothing when nothing changed. */
    void announced(LayerStreams streams)
    {
        boolean changed = streams.takeChanged() | writtenSince;
        writtenSince = false;
        if (!changed) {
            return;
        }
        for (int r = 0; r < writing.size(); r++) {
            HeldRequest request = writing.get(r);
            if (request.stream.changed) {
                request.stream.changed = false;
                pumpAll(request);
            }
        }
    }

    /** A write of a streamed request ended well: the next one to its consumer rank may go, at the role's next timer. */
    void written(HeldRequest request, Transfer transfer)
    {
        if (request.stream == null) {
            return;
        }
        for (StreamTarget target : request.stream.targets) {
            if (target.inFlight == transfer) {
                // posted from the role's timer, not from inside the transfer poll that reports this one
                target.inFlight = null;
                request.stream.changed = true;
                writtenSince = true;
            }
        }
    }

    /** Forgets a request that was reported. */
    void ended(HeldRequest request)
    {
        writing.remove(request);
    }

    private void pumpAll(HeldRequest request)
    {
        for (StreamTarget target : request.stream.targets) {
            pump(request, target);
        }
    }

    private void pump(HeldRequest request, StreamTarget target)
    {
        while (target.inFlight == null && !target.finished && request.reason == null && !request.failed) {
            // read before the layers: once all are said computed, every layer bit is set
            boolean all = request.stream.allComputed();
            if (request.stream.whole && !all) {
                return;
            }
            int ready = target.selectReady(request.stream);
            if (ready < 0) {
                return;
            }
            boolean last = all && !target.othersWait();
            if (ready == 0) {
                if (last) {
                    // everything was written and has landed: nothing left to carry the completion
                    target.finished = true;
                    runtime.peers().notifyQuietly(target.push.link(), target.done, "push completion");
                }
                return;
            }
            try {
                post(request, target, last);
            }
            catch (RuntimeException e) {
                request.failed = true;
                runtime.metrics().transferFailed();
                LOG.warn("{}: streamed write of request {} to {} failed: {}; the lease frees its blocks", runtime.name(), request.id, target.push.link(),
                        e.getMessage());
                writer.tellPushFailed(target.push, request, e instanceof KvBridgeException typed ? typed.code() : ErrorCode.TRANSFER_FAILED,
                        e.getMessage());
                return;
            }
        }
    }

    /** Posts the ready entries; an empty part (its groups hold no block) is only marked written. */
    private void post(HeldRequest request, StreamTarget target, boolean last)
    {
        myBlocks.select(request.blocks).expandToKernel(geometry.kernelBlocksPerLogical());
        theirBlocks.select(target.consumerBlocks).expandToKernel(target.consumer.kernelBlocksPerLogical());
        target.plan.align(myBlocks, theirBlocks);
        int count = target.plan.countOf(target.slot, myBlocks, theirBlocks, target.ready);
        if (count == 0) {
            target.markReadyWritten();
            return;
        }
        scratch.ensure(count);
        int pairs = target.plan.indicesOf(target.slot, myBlocks, scratch.mine(), theirBlocks, scratch.theirs(), target.ready, target.scratch);
        Transfer transfer = runtime.post(request, TransferOp.WRITE, target.push.link(), target.mine, scratch.mine(), target.theirs, scratch.theirs(),
                pairs, last ? target.done : Messages.layersLanded(target.push.consumerRequestId(), request.id, target.readyLayers(), target.push.consumerEpoch()),
                target.grantKey, leaseNanos);
        target.markReadyWritten();
        target.inFlight = transfer;
        target.finished = last;
        request.writes.put(transfer, target.push);
        request.tracker.state(RequestState.IN_FLIGHT);
    }
}
