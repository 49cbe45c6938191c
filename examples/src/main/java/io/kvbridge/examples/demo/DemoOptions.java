package io.kvbridge.examples.demo;

import static java.util.Objects.requireNonNull;

/**
 * What the demo runs; checked by the command before anything starts.
 *
 * @param backend transport name.
 * @param mode {@code push}, {@code pull} or {@code mixed} (requests alternate).
 * @param layout {@code hma}, {@code mla} or {@code per-layer}.
 * @param producerPp producer pipeline stages.
 * @param producerTp producer tensor-parallel ranks per stage.
 * @param consumerPp decoder pipeline stages.
 * @param consumerTp decoder tensor-parallel ranks per stage.
 * @param requests requests to move.
 * @param concurrency requests in flight.
 * @param maxTokens longest prompt; lengths are drawn uniformly from 1 to this.
 * @param seed random seed of the prompt lengths.
 * @param idleMillis wait after the last request before the idle audit.
 * @param processes whether every producer stage and the decoder run in JVMs of their own.
 * @param leaseMillis how long the producer holds finished blocks without news from the decoder.
 * @param producerCache how the producer lays out its cache.
 * @param consumerCache how the decoder lays out its cache.
 * @param cacheDevice the device both engines keep their caches on, allocated by the transport, or
 *     {@link #HOST_CACHES} for caches in host memory.
 */
public record DemoOptions(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp, int requests,
        int concurrency, int maxTokens, long seed, long idleMillis, boolean processes, long leaseMillis, CacheShape producerCache, CacheShape consumerCache,
        int cacheDevice)
{
    /** {@link #cacheDevice} of caches in host memory. */
    public static final int HOST_CACHES = -1;

    /** Checks the references. */
    public DemoOptions
    {
        requireNonNull(backend, "backend is null");
        requireNonNull(mode, "mode is null");
        requireNonNull(layout, "layout is null");
        requireNonNull(producerCache, "producerCache is null");
        requireNonNull(consumerCache, "consumerCache is null");
        if (cacheDevice < HOST_CACHES) {
            throw new IllegalArgumentException("cacheDevice=" + cacheDevice + " is neither a device index nor HOST_CACHES");
        }
    }

    /** Options with both caches in host memory, in the default shape. */
    public DemoOptions(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp, int requests,
            int concurrency, int maxTokens, long seed, long idleMillis, boolean processes, long leaseMillis)
    {
        this(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis, processes,
                leaseMillis, CacheShape.DEFAULT, CacheShape.DEFAULT, HOST_CACHES);
    }

    /** @return whether the caches are in device memory. */
    public boolean deviceCaches()
    {
        return cacheDevice != HOST_CACHES;
    }

    /** @return the cache shape of one side. */
    public CacheShape cache(boolean prefill)
    {
        return prefill ? producerCache : consumerCache;
    }

    /**
     * How one engine lays out its cache.
     *
     * @param kvPlanes {@code joint}, {@code split} or {@code blockwise} (the per-layer layout's option).
     * @param placement {@code per-layer} or {@code cross-layer} (the per-layer layout's option).
     * @param blockTokens tokens of a scheduler block.
     * @param kernelBlockTokens tokens of an attention-kernel block; divides {@code blockTokens}.
     */
    public record CacheShape(String kvPlanes, String placement, int blockTokens, int kernelBlockTokens)
    {
        /** The shape the demo uses unless told otherwise. */
        public static final CacheShape DEFAULT = new CacheShape("joint", "per-layer", DemoModel.BLOCK_TOKENS, DemoModel.BLOCK_TOKENS);

        /** Checks the references. */
        public CacheShape
        {
            requireNonNull(kvPlanes, "kvPlanes is null");
            requireNonNull(placement, "placement is null");
        }

        /** @return blocks of a prompt of {@code tokens} tokens. */
        public int blocks(int tokens)
        {
            return (tokens + blockTokens - 1) / blockTokens;
        }

        /** @return whether the shape differs from the default only in ways every layout supports. */
        public boolean defaultPlacement()
        {
            return kvPlanes.equals(DEFAULT.kvPlanes) && placement.equals(DEFAULT.placement);
        }
    }
}
