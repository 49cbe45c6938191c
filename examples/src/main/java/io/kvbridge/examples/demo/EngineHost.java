package io.kvbridge.examples.demo;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.Health;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.QuarantinedBlocks;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.json.internal.JsonWriter;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Ranks of an engine in this JVM, used exactly as an inference engine would use its connectors: one
 * bridge, one connector per rank, the caches in off-heap memory, or in device memory that the
 * bridge's transport allocated and that the host fills and checks through the transport's host
 * copies. A decoder host checks every byte of a request once all its ranks reported it, then wipes
 * the blocks, so that at the end its whole cache must be zero again.
 */
public final class EngineHost implements DemoHost
{
    private final HostSpec spec;
    private final Arena arena;
    private final KvBridge bridge;
    private final DemoEngine engine;
    // a prefill that takes time or streams; null when the producer fills and reports at once
    private final PrefillCompute compute;
    private final List<ProducerConnector> producers = new ArrayList<>();
    private final List<ConsumerConnector> consumers = new ArrayList<>();
    private final Map<Integer, TransferParams> params = new HashMap<>();
    private final Map<String, Receiving> receiving = new HashMap<>();
    // failed requests whose blocks hold the sentinel, until the scheduler checks it
    private final Map<Integer, Receiving> reused = new HashMap<>();

    /** What a decoder host writes into the blocks of a failed request once they are handed back. */
    static final byte SENTINEL = (byte) 0xA5;

    /** A request the decoder ranks are receiving. */
    private static final class Receiving
    {
        final int request;
        final int promptBlocks;
        final int writtenTokens;
        final int[][] blockIds;
        final List<String> failures = new ArrayList<>();
        int ranksDone;
        // ranks whose blocks of this request are quarantined and not yet released
        int quarantinedRanks;
        final List<String> quarantineReasons = new ArrayList<>();

        Receiving(int request, int promptBlocks, int writtenTokens, int[][] blockIds)
        {
            this.request = request;
            this.promptBlocks = promptBlocks;
            this.writtenTokens = writtenTokens;
            this.blockIds = blockIds;
        }
    }

    /**
     * Builds the bridge, the caches and a connector per rank.
     *
     * @param spec what to run.
     * @param agentName the transport agent's name, unique among the demo's hosts.
     */
    public EngineHost(HostSpec spec, String agentName)
    {
        this(spec, agentName, null);
    }

    /**
     * Builds the bridge, recording into a registry of the caller's, the caches and a connector per rank.
     *
     * @param spec what to run.
     * @param agentName the transport agent's name, unique among the demo's hosts.
     * @param meters the registry the bridge is built with, or null for the bridge's own.
     */
    public EngineHost(HostSpec spec, String agentName, MeterRegistry meters)
    {
        this.spec = spec;
        DemoOptions options = spec.options();
        this.arena = Arena.ofShared();
        KvBridge opened = null;
        try {
            KvBridge.Builder builder = KvBridge.builder().transport(options.backend()).agentName(agentName).sideChannelSecret(spec.sideChannelSecret());
            if (meters != null) {
                builder.meterRegistry(meters);
            }
            Map<String, String> transportConfig = new LinkedHashMap<>(options.transportOptions());
            if (options.deviceCaches()) {
                // every instance of the bridge, the ranks' included, works on the caches' device
                transportConfig.put("device", Integer.toString(options.cacheDevice()));
            }
            if (!transportConfig.isEmpty()) {
                builder.transportConfig(transportConfig);
            }
            Map<String, Object> extra = new LinkedHashMap<>();
            if (!options.discovery().isEmpty()) {
                extra.put("discovery", options.discovery());
            }
            if (!spec.bindHost().isEmpty()) {
                // the bridge's own transport instance follows it too (UCX listens on that interface only)
                extra.put("side_channel_host", spec.bindHost());
            }
            if (!extra.isEmpty()) {
                builder.config(JsonWriter.write(Map.of("kv_connector_extra_config", extra), false, 2));
            }
            opened = builder.build();
            this.bridge = opened;
            DemoModel model = options.demoModel();
            EngineMemory memory = options.deviceCaches() ? EngineMemory.device(arena, bridge.transport(), options.cacheDevice()) : EngineMemory.host(arena);
            this.engine = new DemoEngine(spec.engineId(), model, bridge, memory, spec.ppSize(), spec.tpSize(), spec.capacity(),
                    DemoRun.stateCapacity(options), options.cache(spec.prefill()), spec.stages());
            for (CacheGeometry rank : engine.ranks) {
                // a push decoder gives up on writes that did not come within two leases: the producer
                // would have freed the blocks by then, and the demo's prefill itself takes no time
                ConnectorSettings.Builder settings = ConnectorSettings.builder(spec.engineId(), rank).cacheSpec(engine.spec)
                        .leaseDuration(Duration.ofMillis(options.leaseMillis())).registrationTimeout(Duration.ofMillis(2 * options.leaseMillis()))
                        .integrity(options.integrity());
                if (!spec.prefill() && options.stallProducerMillis() > 0) {
                    // the stall-producer fault: the decoder gives up well before the stopped producer resumes
                    Duration deadline = Duration.ofMillis(Math.max(1, options.stallProducerMillis() / 2));
                    settings.transferTimeout(deadline).registrationTimeout(deadline);
                }
                if (!spec.bindHost().isEmpty()) {
                    settings.sideChannel(spec.bindHost(), 0);
                }
                if (spec.prefill()) {
                    if (!spec.stageSideChannels().isEmpty()) {
                        settings.sideChannel(spec.bindAddress(), spec.stageSideChannels().get(rank.rank().ppRank()).port())
                                .stageSideChannels(spec.stageSideChannels());
                    }
                    producers.add(bridge.producer(settings.build()));
                }
                else {
                    consumers.add(bridge.consumer(settings.build()));
                }
            }
            this.compute = spec.prefill() && options.computedPrefill() ? new PrefillCompute(engine, producers, options) : null;
        }
        catch (RuntimeException e) {
            closeAll(opened);
            throw e;
        }
    }

    /** @return the bridge, for example to serve its meters. */
    public KvBridge bridge()
    {
        return bridge;
    }

    /** @return the producer's id of a request. */
    static String producerId(int request)
    {
        return "req-" + request;
    }

    /** @return the decoder's id of a request: the producer's with an instance suffix, which push matching ignores. */
    static String decoderId(int request)
    {
        return String.format(Locale.ROOT, "req-%d-%08x", request, 0xdec00000 ^ request);
    }

    @Override
    public String label()
    {
        return spec.label();
    }

    @Override
    public int ranks()
    {
        return spec.ranks();
    }

    @Override
    public void awaitReady()
    {
        // the connectors were created with the host: their side channel already serves
    }

    @Override
    public void prefill(int request, int tokens, int[][] blockIds)
    {
        if (compute != null) {
            compute.start(request, producerId(request), tokens, blockIds);
            return;
        }
        engine.forEachPage(engine.shape.blocks(tokens), blockIds, EngineMemory.Access.WRITE, (page, where) -> DemoEngine.fill(page, where, request));
        TransferParams first = null;
        for (ProducerConnector rank : producers) {
            TransferParams own = rank.prefillFinished(producerId(request), BlockIds.of(blockIds));
            first = first == null ? own : first;
        }
        if (spec.options().corrupted(request)) {
            corrupt(engine.shape.blocks(tokens), blockIds);
        }
        params.put(request, first);
    }

    /**
     * The {@code corrupt:N} fault: changes one byte of the request in this producer's memory after
     * {@code prefillFinished} digested it and before any byte moves, as a flipped bit in flight would
     * arrive: byte 0 of the last page of the first layer visited, a token the producer wrote in a block
     * every group exchanges (a sliding window keeps the trailing blocks). With Mamba layers, byte 0 of
     * the first state component visited instead, so that the audit shows a changed state byte. Host
     * caches only.
     */
    private void corrupt(int promptBlocks, int[][] blockIds)
    {
        int[] target = {-1, -1};
        boolean state = engine.model.stateful();
        engine.forEachPage(promptBlocks, blockIds, EngineMemory.Access.READ, (page, where) -> {
            if (state) {
                if (target[0] == -1 && where.state()) {
                    target[0] = where.layer();
                    target[1] = where.firstToken();
                }
            }
            else if (target[0] == -1 || where.layer() == target[0] && where.firstToken() > target[1]) {
                target[0] = where.layer();
                target[1] = where.firstToken();
            }
            return 0;
        });
        boolean[] done = {false};
        engine.forEachPage(promptBlocks, blockIds, EngineMemory.Access.WRITE, (page, where) -> {
            if (!done[0] && where.layer() == target[0] && where.firstToken() == target[1]) {
                page.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) ~page.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
                done[0] = true;
            }
            return 0;
        });
    }

    @Override
    public boolean paramsReady(int request)
    {
        return compute == null ? params.containsKey(request) : compute.ready(request);
    }

    @Override
    public TransferParams params(int request)
    {
        if (compute != null) {
            return compute.params(request);
        }
        TransferParams given = params.remove(request);
        if (given == null) {
            throw new IllegalStateException(label() + " did not prefill request " + request);
        }
        return given;
    }

    @Override
    public void receive(int request, TransferParams producerParams, TransferMode mode, int tokens, int[][] blockIds)
    {
        String id = decoderId(request);
        // the producer wrote whole blocks of its own size: a larger last block of ours keeps a zero tail
        DemoOptions.CacheShape producer = spec.options().producerCache();
        int written = producer.blocks(tokens) * producer.blockTokens();
        receiving.put(id, new Receiving(request, engine.shape.blocks(tokens), written, blockIds));
        for (ConsumerConnector rank : consumers) {
            rank.blocksAllocated(id, producerParams, mode, BlockIds.of(blockIds));
        }
    }

    @Override
    public boolean poll(Events events)
    {
        boolean any = false;
        if (compute != null) {
            compute.check();
        }
        for (ProducerConnector rank : producers) {
            for (FreedRequest freed : rank.poll()) {
                any = true;
                events.freed(freed.requestId(), freed.reason());
            }
        }
        for (ConsumerConnector rank : consumers) {
            ReceiveBatch batch = rank.poll();
            if (batch.isEmpty()) {
                continue;
            }
            any = true;
            for (String id : batch.received()) {
                rankDone(id, null, events);
            }
            // a failure's quarantine comes in the same batch: marked first, so that its blocks are not touched
            for (QuarantinedBlocks quarantine : batch.quarantined()) {
                Receiving request = receiving(quarantine.requestId());
                request.quarantinedRanks++;
                request.quarantineReasons.add(quarantine.reason());
            }
            for (ReceiveFailure failure : batch.failed()) {
                rankDone(failure.requestId(), describe(failure), events);
            }
            for (QuarantinedBlocks release : batch.released()) {
                Receiving request = receiving(release.requestId());
                if (request.quarantinedRanks == 0) {
                    throw new DemoFailure(label() + " released request " + release.requestId() + ", which it had not quarantined");
                }
                request.quarantinedRanks--;
                events.released(request.request, release.reason());
                handBack(request, events);
            }
        }
        return any;
    }

    /** A failure's code and message, then which blocks it leaves invalid: {@code [invalid blocks per group N,M; first invalid block F]}. */
    private static String describe(ReceiveFailure failure)
    {
        StringBuilder counts = new StringBuilder();
        for (int g = 0; g < failure.invalidBlocks().groupCount(); g++) {
            counts.append(g == 0 ? "" : ",").append(failure.invalidBlocks().group(g).length);
        }
        return failure.code().id() + " " + failure.message() + " [invalid blocks per group " + counts + "; first invalid block "
                + failure.firstInvalidBlock() + "]";
    }

    /**
     * Decoder: which layers of a request every rank holding them has loaded, by the model's layer
     * index, as {@code layerLoaded} answers while the request is being received.
     *
     * @param request the request's index.
     * @return one flag per layer of the model; null once the request was reported and polled.
     */
    public boolean[] layersLoaded(int request)
    {
        List<String> names = engine.spec.layers().stream().map(layer -> layer.name()).toList();
        boolean[] loaded = new boolean[names.size()];
        java.util.Arrays.fill(loaded, true);
        for (int r = 0; r < consumers.size(); r++) {
            for (Region region : engine.ranks.get(r).regions()) {
                for (String member : region.members()) {
                    try {
                        loaded[names.indexOf(member)] &= consumers.get(r).layerLoaded(decoderId(request), member);
                    }
                    catch (io.kvbridge.spi.KvBridgeException e) {
                        // the request is no longer received here: reported and polled
                        return null;
                    }
                }
            }
        }
        return loaded;
    }

    private Receiving receiving(String id)
    {
        Receiving request = receiving.get(id);
        if (request == null) {
            throw new DemoFailure(label() + " reported request " + id + ", which it was never given");
        }
        return request;
    }

    private void rankDone(String id, String failure, Events events)
    {
        Receiving request = receiving(id);
        if (failure != null) {
            request.failures.add(failure);
        }
        if (++request.ranksDone < consumers.size()) {
            return;
        }
        if (request.failures.isEmpty()) {
            events.decodeReady(request.request);
        }
        if (request.quarantinedRanks > 0) {
            // a late writer may still reach these blocks: neither checked, wiped nor reused until released
            // one event per rank's quarantine, as each rank's release comes apart
            request.quarantineReasons.forEach(reason -> events.quarantined(request.request, reason));
            return;
        }
        handBack(request, events);
    }

    /**
     * Every rank reported the request and none holds its blocks in quarantine: the bytes of a request
     * that arrived are checked and wiped; a failed request's blocks are reused at once, as an engine
     * would recompute into them, by writing {@link #SENTINEL} into them, which no late write may change
     * until the scheduler asks {@link #sentinelChanged}.
     */
    private void handBack(Receiving request, Events events)
    {
        if (request.ranksDone < consumers.size() || request.quarantinedRanks > 0) {
            return;
        }
        receiving.remove(decoderId(request.request));
        int index = request.request;
        boolean arrived = request.failures.isEmpty();
        long parityErrors = arrived
                ? engine.forEachPage(request.promptBlocks, request.blockIds, EngineMemory.Access.READ, (page, where) -> DemoEngine.check(page, where, index, request.writtenTokens))
                : 0;
        engine.forEachPage(request.promptBlocks, request.blockIds, EngineMemory.Access.WRITE, (page, where) -> {
            page.fill(arrived ? 0 : SENTINEL);
            return 0;
        });
        if (!arrived) {
            reused.put(index, request);
        }
        events.checked(index, parityErrors, List.copyOf(request.failures));
    }

    @Override
    public long sentinelChanged(int request)
    {
        Receiving reusedBlocks = reused.remove(request);
        if (reusedBlocks == null) {
            throw new IllegalStateException(label() + " holds no sentinel of request " + request + ": it did not fail here, or was checked already");
        }
        long changed = engine.forEachPage(reusedBlocks.promptBlocks, reusedBlocks.blockIds, EngineMemory.Access.READ, (page, where) -> {
            long bytes = 0;
            for (long o = 0; o < page.byteSize(); o++) {
                bytes += page.get(ValueLayout.JAVA_BYTE, o) == SENTINEL ? 0 : 1;
            }
            return bytes;
        });
        engine.forEachPage(reusedBlocks.promptBlocks, reusedBlocks.blockIds, EngineMemory.Access.WRITE, (page, where) -> {
            page.fill((byte) 0);
            return 0;
        });
        return changed;
    }

    @Override
    public Map<String, Object> audit()
    {
        ConnectorAudit idle = bridge.audit();
        Health health = bridge.health();
        MeterRegistry meters = bridge.metricsRegistry(MeterRegistry.class);
        int registrationsExpected = engine.ranks.stream().mapToInt(rank -> rank.allocations().size()).sum();
        Map<String, Object> audit = new LinkedHashMap<>();
        audit.put("transfers", summaryCount(meters, "kvbridge.transfer.bytes"));
        audit.put("bytes", summaryTotal(meters, "kvbridge.transfer.bytes"));
        audit.put("descriptors", summaryTotal(meters, "kvbridge.transfer.descriptors"));
        audit.put("operations", summaryTotal(meters, "kvbridge.transfer.operations"));
        audit.put("failedTransfers", counter(meters, "kvbridge.transfer.failed"));
        audit.put("failedNotifications", counter(meters, "kvbridge.notification.failed"));
        audit.put("expiredLeases", counter(meters, "kvbridge.lease.expired"));
        // the decoder's side of a request, and the hand-over the decoder records
        audit.put("requestLatency", LatencyBuckets.read(meters, "kvbridge.request.time", "side", spec.prefill() ? "producer" : "consumer"));
        audit.put("handoverLatency", LatencyBuckets.read(meters, "kvbridge.handover.time"));
        audit.put("layerComputeNanos", compute == null ? 0 : compute.computeNanos());
        audit.put("layersComputed", compute == null ? 0 : compute.layersComputed());
        audit.put("prefillsCutShort", compute == null ? 0 : compute.cutShort());
        audit.put("nonZeroBytes", spec.prefill() ? 0 : engine.nonZeroBytes());
        audit.put("cacheBytes", engine.totalBytes());
        // what the hosts allocated, not what was asked: the audit shows where the bytes really were
        audit.put("deviceCacheBytes", engine.onDevice() ? engine.totalBytes() : 0);
        audit.put("stages", stages());
        Map<String, Object> held = new LinkedHashMap<>();
        held.put("requests", idle.requests());
        held.put("inFlightTransfers", idle.inFlightTransfers());
        held.put("leasesHeld", idle.leasesHeld());
        held.put("stashedRegistrations", idle.stashedRegistrations());
        held.put("retainedHandles", idle.retainedHandles());
        held.put("grants", idle.grants());
        held.put("quarantinedRequests", idle.quarantinedRequests());
        held.put("transportHandles", idle.transport().transfers());
        held.put("registrations", idle.transport().registrations());
        held.put("registrationsExpected", registrationsExpected);
        held.put("preparedLists", idle.transport().preparedLists());
        held.put("peers", idle.transport().peers());
        audit.put("idle", held);
        audit.put("health", health.problems());
        audit.put("idleOk", idle.idle() && idle.transport().registrations() == registrationsExpected && health.healthy());
        return audit;
    }

    private List<Map<String, Object>> stages()
    {
        List<Map<String, Object>> stages = new ArrayList<>();
        for (CacheGeometry rank : engine.ranks) {
            if (rank.rank().tpRank() != 0) {
                continue;
            }
            Map<String, Object> stage = new LinkedHashMap<>();
            stage.put("stage", rank.rank().ppRank());
            // a layer kept as K/V planes is in two regions
            stage.put("layers", rank.regions().stream().flatMap(region -> region.members().stream()).distinct().count());
            stage.put("blockTokens", rank.blockTokens());
            stage.put("regions", rank.regions().size());
            stage.put("capacityPerRegion", rank.regions().stream().map(Region::capacity).distinct().toList());
            stage.put("blockBytesPerRegion", rank.regions().stream().map(Region::blockBytes).distinct().toList());
            stages.add(stage);
        }
        return stages;
    }

    private static long summaryCount(MeterRegistry registry, String name)
    {
        DistributionSummary summary = registry.find(name).summary();
        return summary == null ? 0 : summary.count();
    }

    private static long summaryTotal(MeterRegistry registry, String name)
    {
        DistributionSummary summary = registry.find(name).summary();
        return summary == null ? 0 : (long) summary.totalAmount();
    }

    private static long counter(MeterRegistry registry, String name)
    {
        Counter counter = registry.find(name).counter();
        return counter == null ? 0 : (long) counter.count();
    }

    @Override
    public void close()
    {
        closeAll(bridge);
    }

    private void closeAll(KvBridge opened)
    {
        try {
            if (compute != null) {
                compute.close();
            }
            for (ConsumerConnector connector : consumers) {
                connector.close();
            }
            for (ProducerConnector connector : producers) {
                connector.close();
            }
            if (opened != null) {
                opened.close();
            }
        }
        finally {
            arena.close();
        }
    }
}
