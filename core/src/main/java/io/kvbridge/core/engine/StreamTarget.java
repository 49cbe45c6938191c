package io.kvbridge.core.engine;

import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * One consumer rank a streamed request is written to: the plan and lists of the link to it, its
 * blocks, which of the plan's entries were written, and the write in flight. Writes to one target
 * go one at a time, each carrying every entry whose layers are computed by then, so that the last
 * one, which carries the completion, lands after all the others. Worker thread only.
 */
final class StreamTarget
{
    final HeldRequest.PushTarget push;
    final LinkPlan plan;
    final int slot;
    final PeerLink.Prepared mine;
    final PeerLink.Prepared theirs;
    final CacheGeometry consumer;
    final int[][] consumerBlocks;
    final byte[] grantKey;
    final byte[] done;
    // per plan entry: the numbers of this rank's layers whose bytes it moves
    private final int[][] needs;
    // per plan entry: the consumer's names of the layers it moves, which a write tells it landed
    private final List<List<String>> consumerLayers = new ArrayList<>();
    private final boolean[] written;
    // the entries of the next write, and the mask the plan fills from
    final boolean[] ready;
    final boolean[] scratch;
    Transfer inFlight;
    boolean finished;

    StreamTarget(HeldRequest.PushTarget push, LinkPlan plan, int slot, PeerLink.Prepared mine, PeerLink.Prepared theirs, CacheGeometry consumer,
            int[][] consumerBlocks, byte[] grantKey, byte[] done, CacheGeometry producer, StreamLayers layers)
    {
        this.push = push;
        this.plan = plan;
        this.slot = slot;
        this.mine = mine;
        this.theirs = theirs;
        this.consumer = consumer;
        this.consumerBlocks = consumerBlocks;
        this.grantKey = grantKey;
        this.done = done;
        List<TransferEntry> entries = plan.plan().entries();
        this.needs = new int[entries.size()][];
        for (int e = 0; e < needs.length; e++) {
            TransferEntry entry = entries.get(e);
            // plans are the consumer's: the remote side is this producer rank
            List<String> moved = entry.layer().isEmpty() ? producer.regions().get(entry.remoteRegion()).members() : List.of(entry.layer());
            consumerLayers.add(entry.layer().isEmpty() ? consumer.regions().get(entry.localRegion()).members() : List.of(entry.layer()));
            needs[e] = new int[moved.size()];
            for (int m = 0; m < moved.size(); m++) {
                needs[e][m] = layers.indexOf(moved.get(m));
                KvBridgeException.check(needs[e][m] >= 0, ErrorCode.PROTOCOL_ERROR, "the plan to consumer rank %s moves layer %s, which rank %s does not hold",
                        plan.plan(), moved.get(m), producer.rank());
            }
        }
        this.written = new boolean[needs.length];
        this.ready = new boolean[needs.length];
        this.scratch = new boolean[needs.length];
    }

    /**
     * Marks in {@link #ready} the entries not yet written whose layers are all computed.
     *
     * @return how many entries are ready, or -1 when none is but some still wait for a layer.
     */
    int selectReady(LayerStream stream)
    {
        int readyCount = 0;
        boolean waiting = false;
        for (int e = 0; e < needs.length; e++) {
            ready[e] = false;
            if (written[e]) {
                continue;
            }
            boolean computed = true;
            for (int layer : needs[e]) {
                computed &= stream.isComputed(layer);
            }
            ready[e] = computed;
            readyCount += computed ? 1 : 0;
            waiting |= !computed;
        }
        return readyCount == 0 && waiting ? -1 : readyCount;
    }

    /** {@return whether an entry outside {@link #ready} is still unwritten} */
    boolean othersWait()
    {
        for (int e = 0; e < needs.length; e++) {
            if (!written[e] && !ready[e]) {
                return true;
            }
        }
        return false;
    }

    /** {@return the consumer's names of the layers the ready entries move} */
    List<String> readyLayers()
    {
        Set<String> names = new LinkedHashSet<>();
        for (int e = 0; e < needs.length; e++) {
            if (ready[e]) {
                names.addAll(consumerLayers.get(e));
            }
        }
        return List.copyOf(names);
    }

    /** Records the ready entries as written: each entry moves once. */
    void markReadyWritten()
    {
        for (int e = 0; e < needs.length; e++) {
            written[e] |= ready[e];
        }
    }
}
