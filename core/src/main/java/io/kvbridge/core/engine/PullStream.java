package io.kvbridge.core.engine;

import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import java.util.List;

/**
 * A request a consumer rank pulls layer by layer: per producer rank it reads from, the layers that
 * rank announced computed, which plan entries were read, and the READ in flight. Reads from one
 * producer rank go one at a time, each carrying every unread entry whose layers are all announced;
 * the one that leaves nothing unread after the rank said all its layers are computed carries the
 * completion, so the producer frees the blocks only once every entry was read. Worker thread only.
 */
final class PullStream
{
    /** One producer rank the request is read from. */
    static final class Source
    {
        final PeerLink link;
        final LinkPlan plan;
        final int slot;
        final PeerLink.Prepared mine;
        final PeerLink.Prepared theirs;
        final CacheGeometry producer;
        final byte[] pullKey;
        final byte[] completion;
        final long groups;
        // per plan entry: the producer's layers it reads, and this rank's layers it fills
        private final int[][] needs;
        private final int[][] fills;
        private final AnnouncedLayers announced;
        private final boolean[] read;
        private final boolean[] reported;
        // the entries of the next read, and the mask the plan fills from
        final boolean[] ready;
        final boolean[] scratch;
        Transfer inFlight;
        boolean finished;

        Source(PeerLink link, LinkPlan plan, int slot, PeerLink.Prepared mine, PeerLink.Prepared theirs, CacheGeometry producer, CacheGeometry consumer,
                StreamLayers consumerLayers, byte[] pullKey, byte[] completion, long groups)
        {
            this.link = link;
            this.plan = plan;
            this.slot = slot;
            this.mine = mine;
            this.theirs = theirs;
            this.producer = producer;
            this.pullKey = pullKey;
            this.completion = completion;
            this.groups = groups;
            StreamLayers producerLayers = new StreamLayers(producer);
            List<TransferEntry> entries = plan.plan().entries();
            this.needs = new int[entries.size()][];
            this.fills = new int[entries.size()][];
            for (int e = 0; e < needs.length; e++) {
                TransferEntry entry = entries.get(e);
                // plans are this consumer's: the remote side is the producer rank
                needs[e] = indices(entry.layer().isEmpty() ? producer.regions().get(entry.remoteRegion()).members() : List.of(entry.layer()), producerLayers,
                        producer);
                fills[e] = indices(entry.layer().isEmpty() ? consumer.regions().get(entry.localRegion()).members() : List.of(entry.layer()), consumerLayers,
                        consumer);
            }
            this.announced = new AnnouncedLayers(producerLayers);
            this.read = new boolean[needs.length];
            this.ready = new boolean[needs.length];
            this.scratch = new boolean[needs.length];
            this.reported = new boolean[consumerLayers.count()];
        }

        private static int[] indices(List<String> names, StreamLayers layers, CacheGeometry geometry)
        {
            int[] indices = new int[names.size()];
            for (int n = 0; n < indices.length; n++) {
                indices[n] = layers.indexOf(names.get(n));
                KvBridgeException.check(indices[n] >= 0, ErrorCode.PROTOCOL_ERROR, "the plan names layer %s, which rank %s does not hold", names.get(n),
                        geometry.rank());
            }
            return indices;
        }

        /** Records announced layers, all or none; {@return null, or what is wrong with them} */
        String announce(List<String> names, boolean all)
        {
            return announced.announce(names, all);
        }

        /**
         * Marks in {@link #ready} the unread entries whose layers are all announced.
         *
         * @return how many entries are ready.
         */
        int selectReady()
        {
            int count = 0;
            for (int e = 0; e < needs.length; e++) {
                boolean computed = !read[e];
                for (int layer : needs[e]) {
                    computed &= announced.announced(layer);
                }
                ready[e] = computed;
                count += computed ? 1 : 0;
            }
            return count;
        }

        boolean allSaid()
        {
            return announced.allSaid();
        }

        /** {@return whether an entry outside {@link #ready} is still unread} */
        boolean othersWait()
        {
            for (int e = 0; e < needs.length; e++) {
                if (!read[e] && !ready[e]) {
                    return true;
                }
            }
            return false;
        }

        /** Records the ready entries as read (posted; one read is in flight at a time, so they land before the next). */
        void markReadyRead()
        {
            for (int e = 0; e < needs.length; e++) {
                read[e] |= ready[e];
            }
        }

        /** Tells the readiness every layer of this rank whose entries from this producer rank were all read; allocates nothing. */
        void reportLanded(LayerReadiness readiness)
        {
            for (int e = 0; e < fills.length; e++) {
                for (int layer : fills[e]) {
                    if (read[e] && !reported[layer] && allRead(layer)) {
                        reported[layer] = true;
                        readiness.landed(link.agent(), layer);
                    }
                }
            }
        }

        private boolean allRead(int layer)
        {
            for (int e = 0; e < fills.length; e++) {
                for (int filled : fills[e]) {
                    if (filled == layer && !read[e]) {
                        return false;
                    }
                }
            }
            return true;
        }
    }

    final Source[] sources;
    final int[][] producerIds;
    final long leaseNanos;

    PullStream(Source[] sources, int[][] producerIds, long leaseNanos)
    {
        this.sources = sources;
        this.producerIds = producerIds;
        this.leaseNanos = leaseNanos;
    }

    /** {@return the source with that transport agent, or null} */
    Source byAgent(String agent)
    {
        for (Source source : sources) {
            if (source.link.agent().equals(agent)) {
                return source;
            }
        }
        return null;
    }

    /** {@return whether every source's last read was posted or its completion sent} */
    boolean finished()
    {
        for (Source source : sources) {
            if (!source.finished) {
                return false;
            }
        }
        return true;
    }

    /** {@return the groups the sources that have not finished fill} */
    long unfinishedGroups()
    {
        long groups = 0;
        for (Source source : sources) {
            groups |= source.finished ? 0 : source.groups;
        }
        return groups;
    }

    /** {@return how many sources have not finished} */
    int unfinished()
    {
        int count = 0;
        for (Source source : sources) {
            count += source.finished ? 0 : 1;
        }
        return count;
    }
}
