package io.kvbridge.examples.demo;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.Integrity;
import io.kvbridge.spi.KvBridgeException;
import java.util.List;
import java.util.Map;

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
 * @param discovery the discovery location both engines use ({@code etcd://...}), or empty for none.
 * @param hosts whether every producer stage, the decoder and etcd run on "hosts" of their own (network
 *     namespaces, see {@link DemoHosts}); implies {@code processes}, and {@code discovery} is the
 *     hosts' etcd, set when it starts.
 * @param transportOptions options every engine gives its transport on top of the demo's own, such as
 *     {@code allow-unchecked-tcp-lane=true} for {@code ucx} between hosts; named in the audit.
 * @param integrity whether both engines digest every block ({@code crc32c}) or not ({@code off}).
 * @param corruptEvery the {@code corrupt:N} fault: every N-th request (the N-th, the 2N-th, ...) has one
 *     byte of its last block changed in the producer's memory after {@code prefillFinished}, before any
 *     byte moves (of its state, for a model with Mamba layers); 0 for none.
 * @param model {@link DemoModel#DEFAULT} (the layout's own model) or {@link DemoModel#HYBRID_SSM}.
 * @param stallProducerMillis the {@code stall-producer:DURATION} fault: the last producer stage's process is
 *     stopped for this long once request {@link #stalledRequest()} is prefilled, and the decoder gives up on
 *     a request after half of it; 0 for none (see {@link ProducerStall}).
 * @param streamLayers whether the producer announces each request with {@code prefillStarted}, hands its
 *     parameters to the decoder at once and reports each layer with {@code layerComputed} once filled
 *     (pushed, or pulled as the producer announces each layer; integrity off); else it reports
 *     {@code prefillFinished} after its last layer.
 * @param layerComputeNanos simulated compute per layer on the producer, a sleep before each layer is
 *     filled (see {@link PrefillCompute}); 0 for none.
 */
public record DemoOptions(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp, int requests,
        int concurrency, int maxTokens, long seed, long idleMillis, boolean processes, long leaseMillis, CacheShape producerCache, CacheShape consumerCache,
        int cacheDevice, String discovery, boolean hosts, Map<String, String> transportOptions, Integrity integrity, int corruptEvery, String model,
        long stallProducerMillis, boolean streamLayers, long layerComputeNanos)
{
    /** The modes. */
    public static final List<String> MODES = List.of("push", "pull", "mixed");
    /** The layouts. */
    public static final List<String> LAYOUTS = List.of("hma", "mla", "per-layer");

    /** {@link #cacheDevice} of caches in host memory. */
    public static final int HOST_CACHES = -1;

    /**
     * Checks what every host relies on, so that options reaching a worker process as JSON are checked
     * there too; the command checks the combinations and names its options in its messages.
     */
    public DemoOptions
    {
        requireNonNull(backend, "backend is null");
        requireNonNull(mode, "mode is null");
        requireNonNull(layout, "layout is null");
        requireNonNull(producerCache, "producerCache is null");
        requireNonNull(consumerCache, "consumerCache is null");
        requireNonNull(discovery, "discovery is null");
        transportOptions = Map.copyOf(requireNonNull(transportOptions, "transportOptions is null"));
        KvBridgeException.checkArgument(MODES.contains(mode), "mode=%s is not one of %s", mode, MODES);
        KvBridgeException.checkArgument(LAYOUTS.contains(layout), "layout=%s is not one of %s", layout, LAYOUTS);
        model = model == null ? DemoModel.DEFAULT : model;
        KvBridgeException.checkArgument(DemoModel.MODELS.contains(model), "model=%s is not one of %s", model, DemoModel.MODELS);
        KvBridgeException.checkArgument(!model.equals(DemoModel.HYBRID_SSM) || !layout.equals("mla"), "model=%s has no MLA layers; use layout hma or per-layer",
                model);
        int layers = DemoModel.layerCount(model);
        KvBridgeException.checkArgument(producerPp >= 1 && producerPp <= layers && consumerPp >= 1 && consumerPp <= layers,
                "producerPp=%d and consumerPp=%d must be in [1, %d]", producerPp, consumerPp, layers);
        KvBridgeException.checkArgument(producerTp >= 1 && consumerTp >= 1, "producerTp=%d and consumerTp=%d must be positive", producerTp, consumerTp);
        KvBridgeException.checkArgument(requests >= 1 && concurrency >= 1 && maxTokens >= 1, "requests=%d, concurrency=%d and maxTokens=%d must be positive",
                requests, concurrency, maxTokens);
        KvBridgeException.checkArgument(idleMillis >= 0 && leaseMillis > 0, "idleMillis=%d must not be negative and leaseMillis=%d must be positive",
                idleMillis, leaseMillis);
        KvBridgeException.checkArgument(cacheDevice >= HOST_CACHES, "cacheDevice=%d is neither a device index nor HOST_CACHES", cacheDevice);
        KvBridgeException.checkArgument(!hosts || processes, "hosts=true needs processes=true: every host runs its ranks in a JVM of its own");
        integrity = integrity == null ? Integrity.OFF : integrity;
        KvBridgeException.checkArgument(corruptEvery >= 0, "corruptEvery=%d is negative", corruptEvery);
        KvBridgeException.checkArgument(stallProducerMillis >= 0, "stallProducerMillis=%d is negative", stallProducerMillis);
        KvBridgeException.checkArgument(stallProducerMillis == 0 || processes && requests >= 2,
                "stallProducerMillis=%d stops a producer process while it is mid-request: it needs processes=true and at least 2 requests",
                stallProducerMillis);
        KvBridgeException.checkArgument(layerComputeNanos >= 0, "layerComputeNanos=%d is negative", layerComputeNanos);
        KvBridgeException.checkArgument(!streamLayers || integrity == Integrity.OFF,
                "streamLayers=true needs integrity=off (integrity=%s): a block's digest needs its final bytes", integrity.configName());
        KvBridgeException.checkArgument(!(streamLayers || layerComputeNanos > 0) || corruptEvery == 0 && stallProducerMillis == 0,
                "corruptEvery=%d and stallProducerMillis=%d act on a prefill that ends at once; not with streamLayers or layerComputeNanos", corruptEvery,
                stallProducerMillis);
    }

    /** Options without streaming or per-layer compute. */
    public DemoOptions(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp, int requests,
            int concurrency, int maxTokens, long seed, long idleMillis, boolean processes, long leaseMillis, CacheShape producerCache,
            CacheShape consumerCache, int cacheDevice, String discovery, boolean hosts, Map<String, String> transportOptions, Integrity integrity,
            int corruptEvery, String model, long stallProducerMillis)
    {
        this(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis, processes,
                leaseMillis, producerCache, consumerCache, cacheDevice, discovery, hosts, transportOptions, integrity, corruptEvery, model,
                stallProducerMillis, false, 0);
    }

    /** Options without the stall fault. */
    public DemoOptions(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp, int requests,
            int concurrency, int maxTokens, long seed, long idleMillis, boolean processes, long leaseMillis, CacheShape producerCache,
            CacheShape consumerCache, int cacheDevice, String discovery, boolean hosts, Map<String, String> transportOptions, Integrity integrity,
            int corruptEvery, String model)
    {
        this(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis, processes,
                leaseMillis, producerCache, consumerCache, cacheDevice, discovery, hosts, transportOptions, integrity, corruptEvery, model, 0);
    }

    /** Options of the layout's own model. */
    public DemoOptions(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp, int requests,
            int concurrency, int maxTokens, long seed, long idleMillis, boolean processes, long leaseMillis, CacheShape producerCache,
            CacheShape consumerCache, int cacheDevice, String discovery, boolean hosts, Map<String, String> transportOptions, Integrity integrity,
            int corruptEvery)
    {
        this(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis, processes,
                leaseMillis, producerCache, consumerCache, cacheDevice, discovery, hosts, transportOptions, integrity, corruptEvery, DemoModel.DEFAULT);
    }

    /** Options without block digests or faults. */
    public DemoOptions(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp, int requests,
            int concurrency, int maxTokens, long seed, long idleMillis, boolean processes, long leaseMillis, CacheShape producerCache,
            CacheShape consumerCache, int cacheDevice, String discovery, boolean hosts, Map<String, String> transportOptions)
    {
        this(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis, processes,
                leaseMillis, producerCache, consumerCache, cacheDevice, discovery, hosts, transportOptions, Integrity.OFF, 0);
    }

    /**
     * @param request a request's index, from 0.
     * @return whether the {@code corrupt:N} fault changes a byte of it: the N-th, 2N-th, ... request.
     */
    public boolean corrupted(int request)
    {
        return corruptEvery > 0 && (request + 1) % corruptEvery == 0;
    }

    /** @return how many of the requests the {@code corrupt:N} fault changes. */
    public int corruptedRequests()
    {
        return corruptEvery == 0 ? 0 : requests / corruptEvery;
    }

    /** Options with both caches in host memory, in the default shape. */
    public DemoOptions(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp, int requests,
            int concurrency, int maxTokens, long seed, long idleMillis, boolean processes, long leaseMillis)
    {
        this(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis, processes,
                leaseMillis, CacheShape.DEFAULT, CacheShape.DEFAULT, HOST_CACHES, "", false, Map.of());
    }

    /**
     * @param location the discovery location to use instead.
     * @return these options with another discovery location.
     */
    public DemoOptions withDiscovery(String location)
    {
        return new DemoOptions(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis,
                processes, leaseMillis, producerCache, consumerCache, cacheDevice, location, hosts, transportOptions, integrity, corruptEvery, model, stallProducerMillis, streamLayers, layerComputeNanos);
    }

    /**
     * @param options the options every engine gives its transport instead.
     * @return these options with other transport options.
     */
    public DemoOptions withTransportOptions(Map<String, String> options)
    {
        return new DemoOptions(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis,
                processes, leaseMillis, producerCache, consumerCache, cacheDevice, discovery, hosts, options, integrity, corruptEvery, model, stallProducerMillis, streamLayers, layerComputeNanos);
    }

    /**
     * @param name the model to run instead.
     * @return these options with another model.
     */
    public DemoOptions withModel(String name)
    {
        return new DemoOptions(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis,
                processes, leaseMillis, producerCache, consumerCache, cacheDevice, discovery, hosts, transportOptions, integrity, corruptEvery, name, stallProducerMillis, streamLayers, layerComputeNanos);
    }

    /**
     * @param millis how long the stall-producer fault stops the last producer stage, or 0 for no stall.
     * @return these options with that fault.
     */
    public DemoOptions withStallProducer(long millis)
    {
        return new DemoOptions(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis,
                processes, leaseMillis, producerCache, consumerCache, cacheDevice, discovery, hosts, transportOptions, integrity, corruptEvery, model, millis, streamLayers, layerComputeNanos);
    }

    /**
     * @param stream whether the producer streams layers.
     * @param computeNanos simulated compute per layer, or 0.
     * @return these options with that prefill.
     */
    public DemoOptions withPrefill(boolean stream, long computeNanos)
    {
        return new DemoOptions(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, requests, concurrency, maxTokens, seed, idleMillis,
                processes, leaseMillis, producerCache, consumerCache, cacheDevice, discovery, hosts, transportOptions, integrity, corruptEvery, model,
                stallProducerMillis, stream, computeNanos);
    }

    /** @return whether the producer's prefill takes time or streams, so that it runs on a thread of its own ({@link PrefillCompute}). */
    public boolean computedPrefill()
    {
        return streamLayers || layerComputeNanos > 0;
    }

    /** @return the request the stall-producer fault stops the producer in: the middle one, so that every handshake is done before it. */
    public int stalledRequest()
    {
        return stallProducerMillis == 0 ? -1 : requests / 2;
    }

    /** @return the model both engines run, built for the layout. */
    public DemoModel demoModel()
    {
        return DemoModel.of(model, layout);
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
        /** The ways an engine keeps K and V. */
        public static final List<String> KV_PLANES = List.of("joint", "split", "blockwise");
        /** Where an engine keeps its layers. */
        public static final List<String> PLACEMENTS = List.of("per-layer", "cross-layer");

        // after the lists, which the constructor reads
        /** The shape the demo uses unless told otherwise. */
        public static final CacheShape DEFAULT = new CacheShape("joint", "per-layer", DemoModel.BLOCK_TOKENS, DemoModel.BLOCK_TOKENS);

        /** Checks the values. */
        public CacheShape
        {
            requireNonNull(kvPlanes, "kvPlanes is null");
            requireNonNull(placement, "placement is null");
            KvBridgeException.checkArgument(KV_PLANES.contains(kvPlanes), "kvPlanes=%s is not one of %s", kvPlanes, KV_PLANES);
            KvBridgeException.checkArgument(PLACEMENTS.contains(placement), "placement=%s is not one of %s", placement, PLACEMENTS);
            KvBridgeException.checkArgument(blockTokens >= 1 && kernelBlockTokens >= 1 && blockTokens % kernelBlockTokens == 0,
                    "kernelBlockTokens=%d must divide blockTokens=%d", kernelBlockTokens, blockTokens);
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
