package io.kvbridge.examples.demo;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.RequestView;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * A producer host's prefill when it takes time or streams ({@code --layer-compute},
 * {@code --stream-layers}): one thread per host runs one prefill at a time, as one accelerator
 * would, walking the model's layers in order. Layer {@code i} of a request is filled no earlier than
 * {@code (i + 1) × layerComputeNanos} after its prefill began on that thread: the thread sleeps
 * ({@link LockSupport#parkNanos}, not a busy wait, so the compute costs no core; a sleep may overshoot
 * by the timer's slack, which the audit's measured time per layer shows), and filling the layer's
 * pages counts toward its time. A host that runs some pipeline stages waits out the layers of the
 * others, as a stage waits for the previous stage's activations.
 *
 * <p>Streamed, the request is announced with {@code prefillStarted} on every rank before the thread
 * takes it (its parameters are ready at once), each layer is reported with {@code layerComputed} on
 * the ranks that hold it once its pages are filled, and {@code allLayersComputed} follows the last.
 * Whole, {@code prefillFinished} follows the last layer, and the parameters are ready only then.
 * A streamed request that ended on the producer before its prefill did (its lease ran out) is
 * dropped: its remaining layers are neither computed nor reported.
 */
final class PrefillCompute implements AutoCloseable
{
    /** How long {@link #params} waits beyond the prefill's own compute before it gives up. */
    private static final long PARAMS_SLACK_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final DemoEngine engine;
    private final List<ProducerConnector> producers;
    private final boolean stream;
    private final long layerNanos;
    // per rank, whether it holds each layer of the model (by index)
    private final boolean[][] held;
    private final ExecutorService thread;
    private final Map<Integer, TransferParams> params = new ConcurrentHashMap<>();
    private final AtomicReference<RuntimeException> failure = new AtomicReference<>();
    private final AtomicLong computeNanos = new AtomicLong();
    private final AtomicLong layersComputed = new AtomicLong();
    private final AtomicLong cutShort = new AtomicLong();

    PrefillCompute(DemoEngine engine, List<ProducerConnector> producers, DemoOptions options)
    {
        this.engine = engine;
        this.producers = List.copyOf(producers);
        this.stream = options.streamLayers();
        this.layerNanos = options.layerComputeNanos();
        List<String> layers = engine.spec.layers().stream().map(layer -> layer.name()).toList();
        this.held = new boolean[engine.ranks.size()][layers.size()];
        for (int r = 0; r < engine.ranks.size(); r++) {
            CacheGeometry rank = engine.ranks.get(r);
            for (Region region : rank.regions()) {
                for (String member : region.members()) {
                    held[r][layers.indexOf(member)] = true;
                }
            }
        }
        this.thread = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("demo-prefill-" + engine.name).factory());
    }

    /**
     * Starts a request's prefill: streamed, announces it on every rank first; then queues its compute.
     *
     * @param request the request's index.
     * @param requestId the producer's id of it.
     * @param tokens its prompt's tokens.
     * @param blockIds its blocks per group.
     */
    void start(int request, String requestId, int tokens, int[][] blockIds)
    {
        BlockIds blocks = BlockIds.of(blockIds);
        if (stream) {
            params.put(request, announce(requestId, blocks, true));
        }
        thread.execute(() -> {
            try {
                boolean computed = compute(request, requestId, tokens, blockIds);
                if (stream && computed) {
                    for (ProducerConnector rank : producers) {
                        try {
                            rank.allLayersComputed(requestId);
                        }
                        catch (KvBridgeException e) {
                            dropEnded(rank, requestId, e);
                            return;
                        }
                    }
                }
                else if (!stream) {
                    params.put(request, announce(requestId, blocks, false));
                }
            }
            catch (RuntimeException e) {
                failure.compareAndSet(null, e);
            }
        });
    }

    /** Reports the request on every rank; the first rank's parameters name every stage. */
    private TransferParams announce(String requestId, BlockIds blocks, boolean started)
    {
        TransferParams first = null;
        for (ProducerConnector rank : producers) {
            TransferParams own = started ? rank.prefillStarted(requestId, blocks) : rank.prefillFinished(requestId, blocks);
            first = first == null ? own : first;
        }
        return first;
    }

    /** {@return whether every layer was computed and reported; false when the request's stream ended first} */
    private boolean compute(int request, String requestId, int tokens, int[][] blockIds)
    {
        long began = System.nanoTime();
        int promptBlocks = engine.shape.blocks(tokens);
        int layers = held.length == 0 ? 0 : held[0].length;
        for (int layer = 0; layer < layers; layer++) {
            long due = began + (layer + 1) * layerNanos;
            for (long left = due - System.nanoTime(); left > 0; left = due - System.nanoTime()) {
                LockSupport.parkNanos(left);
            }
            boolean anyHeld = false;
            for (boolean[] rank : held) {
                anyHeld |= rank[layer];
            }
            if (!anyHeld) {
                continue;
            }
            engine.forEachPage(promptBlocks, blockIds, EngineMemory.Access.WRITE, layer, (page, where) -> DemoEngine.fill(page, where, request));
            if (stream) {
                String name = engine.spec.layers().get(layer).name();
                for (int r = 0; r < producers.size(); r++) {
                    if (!held[r][layer]) {
                        continue;
                    }
                    try {
                        producers.get(r).layerComputed(requestId, name);
                    }
                    catch (KvBridgeException e) {
                        dropEnded(producers.get(r), requestId, e);
                        computeNanos.addAndGet(System.nanoTime() - began);
                        layersComputed.addAndGet(layer + 1);
                        return false;
                    }
                }
            }
        }
        computeNanos.addAndGet(System.nanoTime() - began);
        layersComputed.addAndGet(layers);
        return true;
    }

    /**
     * A rank refused a layer or the end of a streamed prefill. Once the request ended there (its
     * lease ran out mid-prefill, as while the process was stopped) an engine drops the request's
     * prefill: the thread goes on with the next one instead of failing the host, and the audit
     * counts it. Any other refusal is the demo's own mistake and fails the host.
     *
     * @throws KvBridgeException the refusal, when the rank still holds the request.
     */
    private void dropEnded(ProducerConnector rank, String requestId, KvBridgeException refusal)
    {
        RequestView view = new RequestView();
        boolean ended = !rank.inspect(requestId, view) || switch (view.state()) {
            case COMPLETED, FAILED, EXPIRED, ABORTED -> true;
            case PENDING, HELD, REGISTERED, IN_FLIGHT -> false;
        };
        if (refusal.code() != ErrorCode.INVALID_ARGUMENT || !ended) {
            throw refusal;
        }
        cutShort.incrementAndGet();
    }

    /** @return whether the request's parameters are ready. @throws DemoFailure when a prefill failed. */
    boolean ready(int request)
    {
        check();
        return params.containsKey(request);
    }

    /** @return the request's parameters, waiting for its prefill to end (streamed: ready at once). */
    TransferParams params(int request)
    {
        long deadline = System.nanoTime() + (held.length == 0 ? 0 : held[0].length) * layerNanos * 64 + PARAMS_SLACK_NANOS;
        while (!ready(request)) {
            if (System.nanoTime() - deadline > 0) {
                throw new DemoFailure(engine.name + " did not finish the prefill of request " + request + " in time; its prefill thread is behind");
            }
            LockSupport.parkNanos(100_000);
        }
        return params.remove(request);
    }

    /** @throws DemoFailure when a prefill failed, naming why. */
    void check()
    {
        RuntimeException failed = failure.get();
        if (failed != null) {
            throw new DemoFailure(engine.name + "'s prefill failed: " + failed.getMessage());
        }
    }

    /** @return the prefill thread's time over all requests, in nanoseconds. */
    long computeNanos()
    {
        return computeNanos.get();
    }

    /** {@return the streamed prefills dropped because their request ended on the producer first} */
    long cutShort()
    {
        return cutShort.get();
    }

    /** @return the layers it walked over all requests. */
    long layersComputed()
    {
        return layersComputed.get();
    }

    @Override
    public void close()
    {
        thread.shutdownNow();
        try {
            thread.awaitTermination(10, TimeUnit.SECONDS);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
