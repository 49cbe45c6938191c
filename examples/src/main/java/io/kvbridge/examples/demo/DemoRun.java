package io.kvbridge.examples.demo;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.KvBridge;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * Runs the demo as a scheduler would: it keeps both engines' block pools, draws the prompts, and
 * drives the hosts that run the ranks, either both engines in this JVM or every producer stage and
 * the decoder in a JVM of its own ({@link DemoOptions#processes()}). The producer fills each
 * request's blocks and reports {@code prefillFinished} on every rank, or with a prefill that takes
 * time or streams ({@link PrefillCompute}) reports it as its prefill thread goes; the parameters go
 * to the decoder once ready, whose ranks call {@code blocksAllocated}. Each request's time from its
 * prefill call to every decoder rank reporting it received is recorded ({@link DecodeReadyTimes}). A request is done when every decoder rank
 * reported it (and its bytes were checked) and every producer rank freed it.
 */
public final class DemoRun
{
    /** How long the run may go without any event before it is declared stuck. */
    private static final long STALL_NANOS = 180_000_000_000L;

    private final DemoOptions options;
    private final IntConsumer progress;
    private final Function<String, MeterRegistry> meters;
    private final BiConsumer<KvBridge, KvBridge> started;

    /**
     * @param options the checked options.
     * @param progress told the number of requests finished so far.
     */
    public DemoRun(DemoOptions options, IntConsumer progress)
    {
        this(options, progress, engine -> null, (producer, decoder) -> {
        });
    }

    /**
     * @param options the checked options.
     * @param progress told the number of requests finished so far.
     * @param meters the registry each engine's bridge is built with, by engine name ({@code prefill},
     *     {@code decode}), or null for the bridge's own; not asked when the engines run in processes of their own.
     * @param started given the producer's and the decoder's bridge once both are built, before any
     *     request; not called when the engines run in processes of their own.
     */
    public DemoRun(DemoOptions options, IntConsumer progress, Function<String, MeterRegistry> meters, BiConsumer<KvBridge, KvBridge> started)
    {
        this.options = options;
        this.progress = progress;
        this.meters = requireNonNull(meters, "meters is null");
        this.started = requireNonNull(started, "started is null");
    }

    /**
     * Blocks of each region: room for the longest prompt of every request in flight.
     *
     * @param options the options.
     * @return the capacity.
     */
    public static int capacity(DemoOptions options)
    {
        return Math.max(capacity(options, options.producerCache()), capacity(options, options.consumerCache()));
    }

    /**
     * Scheduler blocks of each region of one engine: room for the longest prompt of every request in
     * flight, in that engine's block size.
     *
     * @param options the options.
     * @param shape the engine's cache shape.
     * @return the capacity.
     */
    public static int capacity(DemoOptions options, DemoOptions.CacheShape shape)
    {
        DemoModel model = options.demoModel();
        int maxBlocks = shape.blocks(options.maxTokens());
        int perRequest = 0;
        for (int g = 0; g < model.groups().size(); g++) {
            // a Mamba group's states come from a free list of their own (stateCapacity)
            if (!model.groups().get(g).stateful()) {
                perRequest += model.heldBlocks(g, maxBlocks, shape.blockTokens());
            }
        }
        return perRequest * options.concurrency() + 1;
    }

    /**
     * States of each Mamba group's regions: one per request in flight, whatever its length, plus
     * one to spare; 0 for a model without state.
     *
     * @param options the options.
     * @return the states of each state region.
     */
    public static int stateCapacity(DemoOptions options)
    {
        return options.demoModel().stateful() ? options.concurrency() + 1 : 0;
    }

    /**
     * Runs every request and returns the audit.
     *
     * @return the audit, as an ordered map (printed as text or JSON).
     * @throws DemoFailure when a host failed or went away.
     */
    public Map<String, Object> run()
    {
        int producerCapacity = capacity(options, options.producerCache());
        int decoderCapacity = capacity(options, options.consumerCache());
        List<DemoHost> producers = new ArrayList<>();
        List<DemoHost> decoders = new ArrayList<>();
        List<Integer> producerStages = IntStream.range(0, options.producerPp()).boxed().toList();
        List<Integer> decoderStages = IntStream.range(0, options.consumerPp()).boxed().toList();
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        DemoHosts hosts = null;
        try {
            if (options.hosts()) {
                hosts = DemoHosts.start(options);
                for (int stage : producerStages) {
                    producers.add(hosts.startProducer(stage, producerCapacity, secret));
                }
                decoders.add(hosts.startDecoder(decoderCapacity, secret));
            }
            else if (options.processes()) {
                List<SideChannelAddress> addresses = freeLoopbackAddresses(options.producerPp());
                for (int stage : producerStages) {
                    producers.add(ProcessHost.start(new HostSpec(HostSpec.PREFILL, options, producerCapacity, List.of(stage), addresses, secret)));
                }
                decoders.add(ProcessHost.start(new HostSpec(HostSpec.DECODE, options, decoderCapacity, decoderStages, List.of(), secret)));
            }
            else {
                String suffix = ProcessHandle.current().pid() + "-" + System.nanoTime();
                EngineHost producer = new EngineHost(new HostSpec(HostSpec.PREFILL, options, producerCapacity, producerStages, List.of(), secret), "demo-prefill-" + suffix,
                        meters.apply("prefill"));
                producers.add(producer);
                EngineHost decoder = new EngineHost(new HostSpec(HostSpec.DECODE, options, decoderCapacity, decoderStages, List.of(), secret), "demo-decode-" + suffix,
                        meters.apply("decode"));
                decoders.add(decoder);
                started.accept(producer.bridge(), decoder.bridge());
            }
            for (DemoHost host : producers) {
                host.awaitReady();
            }
            for (DemoHost host : decoders) {
                host.awaitReady();
            }
            if (hosts != null) {
                hosts.awaitHealthy(producers);
                hosts.awaitHealthy(decoders);
            }
            return drive(producerCapacity, decoderCapacity, producers, decoders, hosts);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoFailure("interrupted");
        }
        finally {
            for (DemoHost host : decoders) {
                host.close();
            }
            for (DemoHost host : producers) {
                host.close();
            }
            if (hosts != null) {
                hosts.close();
            }
        }
    }

    /** Ports for the producer stages' side channels, free when asked; every stage is told all of them. */
    static List<SideChannelAddress> freeLoopbackAddresses(int count)
    {
        List<ServerSocket> held = new ArrayList<>();
        try {
            List<SideChannelAddress> addresses = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                // held open until all are chosen, so that no two stages get the same port
                ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(socket);
                addresses.add(new SideChannelAddress("127.0.0.1", socket.getLocalPort()));
            }
            return addresses;
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot find free loopback ports for the producer stages' side channels", e);
        }
        finally {
            for (ServerSocket socket : held) {
                try {
                    socket.close();
                }
                catch (IOException ignored) {
                    // nothing was accepted on it
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> drive(int producerCapacity, int decoderCapacity, List<DemoHost> producers, List<DemoHost> decoders, DemoHosts hosts)
            throws InterruptedException
    {
        DemoModel model = options.demoModel();
        DemoOptions.CacheShape producerShape = options.producerCache();
        DemoOptions.CacheShape decoderShape = options.consumerCache();
        BlockPool producerBlocks = new BlockPool(model, producerCapacity, stateCapacity(options), producerShape.blockTokens());
        RequestLedger ledger = new RequestLedger(producers.stream().mapToInt(DemoHost::ranks).sum(), decoders.size(),
                new BlockPool(model, decoderCapacity, stateCapacity(options), decoderShape.blockTokens()), options::corrupted,
                options.stallProducerMillis() > 0 ? new ProducerStall(options) : null);
        ProducerStall stall = ledger.stall;
        DecodeReadyTimes decodeReady = new DecodeReadyTimes(options.requests());
        ledger.decodeReadyTimes = decodeReady;
        // requests whose prefill takes time, in the order they started, until their parameters are ready
        ArrayDeque<RequestLedger.Active> prefilling = new ArrayDeque<>();
        SplittableRandom random = new SplittableRandom(options.seed());
        int next = 0;
        int finished = 0;
        long started = System.nanoTime();
        long lastEvent = started;
        while (finished < options.requests()) {
            boolean idle = true;
            while (next < options.requests() && ledger.active.size() < options.concurrency()
                    && (stall == null || stall.admits(next, ledger.active.isEmpty()))) {
                int tokens = 1 + random.nextInt(options.maxTokens());
                RequestLedger.Active request = new RequestLedger.Active(next, tokens, producerBlocks.allocate(producerShape.blocks(tokens)),
                        ledger.decoderBlocks.allocate(decoderShape.blocks(tokens)));
                ledger.started(request);
                decodeReady.started(next, System.nanoTime());
                for (DemoHost host : producers) {
                    host.prefill(next, tokens, request.producerIds);
                }
                if (options.computedPrefill()) {
                    // the parameters come when the prefill thread has them (streamed: at once); handed over below
                    prefilling.add(request);
                }
                else {
                    handOver(request, producers, decoders, hosts, stall);
                }
                next++;
                idle = false;
            }
            while (!prefilling.isEmpty() && paramsReady(producers, prefilling.getFirst().index)) {
                handOver(prefilling.removeFirst(), producers, decoders, hosts, stall);
                idle = false;
            }
            for (DemoHost host : producers) {
                idle &= !host.poll(ledger);
            }
            for (DemoHost host : decoders) {
                idle &= !host.poll(ledger);
            }
            for (RequestLedger.Active request : ledger.done) {
                producerBlocks.release(request.producerIds);
                if (request.failed) {
                    // no writer reaches the blocks any more: the sentinel the decoder wrote into them must be intact
                    if (ledger.stalled(request.index)) {
                        stall.settled(decoders);
                    }
                    else {
                        long changed = 0;
                        for (DemoHost host : decoders) {
                            changed += host.sentinelChanged(request.index);
                        }
                        if (changed != 0) {
                            ledger.problems.add(changed + " bytes of failed request " + request.index + " changed after its blocks were handed back");
                        }
                    }
                    ledger.decoderBlocks.release(request.decoderIds);
                }
                ledger.finished(request);
                finished++;
                progress.accept(finished);
            }
            ledger.done.clear();
            long now = System.nanoTime();
            if (!idle) {
                lastEvent = now;
            }
            else if (now - lastEvent > STALL_NANOS) {
                throw new DemoFailure("no request moved for " + STALL_NANOS / 1_000_000_000L + " s; " + ledger.active.size() + " requests in flight: "
                        + ledger.active.keySet());
            }
            else {
                Thread.sleep(0, 200_000);
            }
        }
        long elapsedNanos = System.nanoTime() - started;

        // idle audit: nothing may be held a few seconds after the last request
        Thread.sleep(options.idleMillis());
        Map<String, Object> producer = merge(producers);
        Map<String, Object> decoder = merge(decoders);

        Map<String, Object> audit = new LinkedHashMap<>();
        audit.put("backend", options.backend());
        audit.put("transportOptions", options.transportOptions());
        audit.put("mode", options.mode());
        audit.put("layout", options.layout());
        audit.put("model", model.identity().model());
        audit.put("processes", options.processes() ? producers.size() + decoders.size() : 1);
        String discovery = hosts == null ? options.discovery() : hosts.options().discovery() + " (only)";
        audit.put("discovery", discovery.isEmpty() ? "none (side channel addresses)" : discovery);
        audit.put("hosts", hosts == null ? Map.of() : hosts.describe());
        audit.put("requests", options.requests());
        audit.put("concurrency", options.concurrency());
        audit.put("requestsCompleted", ledger.completed);
        long transfers = sum(producer, decoder, "transfers");
        long bytes = sum(producer, decoder, "bytes");
        long failedTransfers = sum(producer, decoder, "failedTransfers");
        long failedNotifications = sum(producer, decoder, "failedNotifications");
        long expiredCounted = sum(producer, decoder, "expiredLeases");
        long leftover = (long) decoder.get("nonZeroBytes");
        audit.put("transfers", transfers);
        audit.put("bytes", bytes);
        audit.put("descriptors", sum(producer, decoder, "descriptors"));
        audit.put("operations", sum(producer, decoder, "operations"));
        audit.put("seconds", elapsedNanos / 1e9);
        audit.put("throughputGBps", bytes / (double) elapsedNanos);
        audit.put("failedTransfers", failedTransfers);
        audit.put("failedReceives", ledger.receiveFailures);
        audit.put("failedNotifications", failedNotifications);
        audit.put("expiredLeases", Math.max(ledger.expiredLeases, expiredCounted));
        audit.put("parityErrors", ledger.parityErrors);
        audit.put("blocks", Map.of("producer", producerBlocks.audit(), "decoder", ledger.decoderBlocks.audit()));
        audit.put("integrity", options.integrity().configName());
        if (options.corruptEvery() > 0) {
            Map<String, Object> fault = new LinkedHashMap<>();
            fault.put("fault", "corrupt:" + options.corruptEvery());
            fault.put("requestsCorrupted", options.corruptedRequests());
            fault.put("refusedByDigest", ledger.digestRefused);
            audit.put("corruption", fault);
        }
        if (stall != null) {
            audit.put("stall", stall.audit());
        }
        audit.put("quarantines", ledger.quarantined);
        audit.put("releasedOnProof", ledger.released);
        audit.put("bytesChangedOutsideRequests", leftover);
        audit.put("decoderPromptTokensNeeded", ledger.tokensNeeded);
        audit.put("decoderPromptTokensReceived", ledger.tokensReceived);
        audit.put("decoderPromptTokensComputedLocally", ledger.tokensNeeded - ledger.tokensReceived);
        // from the decoder's timers: blocksAllocated to received, and prefill finished to the first data in place
        Map<String, Object> latency = new LinkedHashMap<>();
        latency.put("request", LatencyBuckets.percentiles(decoder.get("requestLatency")));
        latency.put("handover", LatencyBuckets.percentiles(decoder.get("handoverLatency")));
        audit.put("latency", latency);
        // from the scheduler's clock: the prefill's start to every decoder rank reporting the request received
        audit.put("decodeReady", decodeReady.audit());
        Map<String, Object> prefill = new LinkedHashMap<>();
        prefill.put("streamLayers", options.streamLayers());
        prefill.put("layerComputeMs", options.layerComputeNanos() / 1e6);
        prefill.put("layerCompute", options.layerComputeNanos() == 0 ? "none" : "sleep");
        long layers = (long) producer.getOrDefault("layersComputed", 0L);
        // the prefill threads' time per layer walked, the sleep's overshoot and the filling included
        prefill.put("measuredLayerMs", layers == 0 ? 0.0 : (long) producer.get("layerComputeNanos") / 1e6 / layers);
        audit.put("prefill", prefill);
        audit.put("metadata", Map.of("producer", metadata(producer, options.producerPp(), options.producerTp()), "decoder",
                metadata(decoder, options.consumerPp(), options.consumerTp())));
        audit.put("idle", Map.of("waitMillis", options.idleMillis(), "producer", producer.get("idle"), "decoder", decoder.get("idle")));
        List<String> problems = new ArrayList<>(ledger.problems);
        problems.addAll((List<String>) producer.get("health"));
        problems.addAll((List<String>) decoder.get("health"));
        audit.put("problems", problems.stream().limit(20).toList());
        boolean idleOk = (boolean) producer.get("idleOk") && (boolean) decoder.get("idleOk");
        // with the corrupt:N fault, exactly the changed requests are refused by their digests (each counted as a failed transfer by
        // the one decoder rank), and no changed byte reaches the parity check
        // with the stall-producer fault, its request fails alone (nothing else is in flight meanwhile, so the failed transfers and
        // notifications and the expired leases counted are its), and every other request completes
        int stalled = stall == null ? 0 : 1;
        long stalledTokens = stall == null ? 0 : stall.tokens();
        boolean faultsOk = stall == null
                ? failedTransfers == ledger.digestRefused && failedNotifications == 0 && expiredCounted == 0
                : stall.ok() && ledger.digestRefused == 0;
        boolean ok = ledger.completed == options.requests() - ledger.digestRefused - stalled && ledger.digestRefused == options.corruptedRequests()
                && faultsOk && ledger.receiveFailures == 0 && ledger.expiredLeases == 0 && ledger.parityErrors == 0 && leftover == 0
                && ledger.tokensReceived == ledger.tokensNeeded - ledger.digestRefusedTokens - stalledTokens && ledger.problems.isEmpty() && idleOk;
        audit.put("idleOk", idleOk);
        audit.put("ok", ok);
        return audit;
    }

    /** Gives a prefilled request's parameters to the decoder, as a router would. */
    private void handOver(RequestLedger.Active request, List<DemoHost> producers, List<DemoHost> decoders, DemoHosts hosts, ProducerStall stall)
    {
        int index = request.index;
        // the first stage's parameters name every stage's side channel; each stage in a process of its own adds its epoch
        TransferParams params = producers.getFirst().params(index);
        for (DemoHost host : producers.subList(1, producers.size())) {
            params = params.withEpochsOf(host.params(index));
        }
        if (stall != null && index == stall.request()) {
            stall.stop(producers.getLast(), request.tokens);
        }
        TransferMode mode = switch (options.mode()) {
            case "pull" -> TransferMode.PULL;
            case "mixed" -> index % 2 == 0 ? TransferMode.PUSH : TransferMode.PULL;
            default -> TransferMode.PUSH;
        };
        // on hosts of their own, the decoder finds the producer through etcd alone
        TransferParams routed = hosts == null ? params : DemoHosts.withoutAddresses(params);
        for (DemoHost host : decoders) {
            host.receive(index, routed, mode, request.tokens, request.decoderIds);
        }
    }

    private static boolean paramsReady(List<DemoHost> producers, int request)
    {
        for (DemoHost host : producers) {
            if (!host.paramsReady(request)) {
                return false;
            }
        }
        return true;
    }

    /** One engine's audit over all its hosts: counts add up, stages are listed in order. */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> merge(List<DemoHost> hosts)
    {
        Map<String, Object> merged = new LinkedHashMap<>();
        Map<String, Object> idle = new LinkedHashMap<>();
        List<Map<String, Object>> stages = new ArrayList<>();
        List<String> health = new ArrayList<>();
        boolean idleOk = true;
        for (DemoHost host : hosts) {
            Map<String, Object> audit = host.audit();
            for (Map.Entry<String, Object> entry : audit.entrySet()) {
                if (entry.getValue() instanceof Number number) {
                    merged.merge(entry.getKey(), number.longValue(), (a, b) -> (long) a + (long) b);
                }
            }
            for (Map.Entry<String, Object> entry : ((Map<String, Object>) audit.get("idle")).entrySet()) {
                idle.merge(entry.getKey(), ((Number) entry.getValue()).longValue(), (a, b) -> (long) a + (long) b);
            }
            for (String latency : List.of("requestLatency", "handoverLatency")) {
                merged.put(latency, LatencyBuckets.add(merged.get(latency), audit.get(latency)));
            }
            stages.addAll((List<Map<String, Object>>) audit.get("stages"));
            for (String problem : (List<String>) audit.get("health")) {
                health.add(host.label() + ": " + problem);
            }
            idleOk &= (boolean) audit.get("idleOk");
        }
        stages.sort(Comparator.comparingInt(stage -> ((Number) stage.get("stage")).intValue()));
        // the idle audit holds counts only; the health check's verdict joins them
        idle.put("healthy", health.isEmpty());
        merged.put("idle", idle);
        merged.put("health", health);
        merged.put("stages", stages);
        merged.put("idleOk", idleOk);
        return merged;
    }

    private static long sum(Map<String, Object> producer, Map<String, Object> decoder, String key)
    {
        return (long) producer.get(key) + (long) decoder.get(key);
    }

    private Map<String, Object> metadata(Map<String, Object> engine, int ppSize, int tpSize)
    {
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("ppSize", ppSize);
        metadata.put("tpSize", tpSize);
        metadata.put("layout", options.layout());
        metadata.put("stages", engine.get("stages"));
        metadata.put("cacheBytes", engine.get("cacheBytes"));
        long onDevice = (long) engine.get("deviceCacheBytes");
        metadata.put("cacheMemory", onDevice == 0 ? "host" : onDevice == (long) engine.get("cacheBytes") ? "device " + options.cacheDevice()
                : "host and device " + options.cacheDevice());
        return metadata;
    }
}
