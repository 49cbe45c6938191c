package io.kvbridge.examples.demo;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.BiConsumer;
import java.util.function.IntConsumer;

/**
 * Runs the demo: a producer engine and a decoder engine in one process, each with its own bridge,
 * connected through their connectors exactly as an inference engine would use them. The producer
 * fills each request's blocks, reports {@code prefillFinished} on every rank and hands the
 * parameters to the decoder, whose ranks call {@code blocksAllocated}; both sides are polled until
 * every rank reported. The decoder checks every byte it received, then wipes the blocks, so that at
 * the end its whole cache must be zero again.
 */
public final class DemoRun
{
    private final DemoOptions options;
    private final IntConsumer progress;
    private final BiConsumer<KvBridge, KvBridge> started;

    /**
     * @param options the checked options.
     * @param progress told the number of requests finished so far.
     */
    public DemoRun(DemoOptions options, IntConsumer progress)
    {
        this(options, progress, (producer, decoder) -> {
        });
    }

    /**
     * @param options the checked options.
     * @param progress told the number of requests finished so far.
     * @param started given the producer's and the decoder's bridge once both are built, before any request.
     */
    public DemoRun(DemoOptions options, IntConsumer progress, BiConsumer<KvBridge, KvBridge> started)
    {
        this.options = options;
        this.progress = progress;
        this.started = requireNonNull(started, "started is null");
    }

    /** One request on its way. */
    private static final class Active
    {
        final int index;
        final String id;
        final int tokens;
        final int promptBlocks;
        final int[][] producerIds;
        final int[][] decoderIds;
        int producerRanksDone;
        int decoderRanksDone;
        boolean failed;
        boolean decoderChecked;

        Active(int index, int tokens, int promptBlocks, int[][] producerIds, int[][] decoderIds)
        {
            this.index = index;
            this.id = "req-" + index;
            this.tokens = tokens;
            this.promptBlocks = promptBlocks;
            this.producerIds = producerIds;
            this.decoderIds = decoderIds;
        }
    }

    /**
     * Runs every request and returns the audit.
     *
     * @return the audit, as an ordered map (printed as text or JSON).
     */
    public Map<String, Object> run()
    {
        DemoModel model = DemoModel.of(options.layout());
        int maxBlocks = (options.maxTokens() + DemoModel.BLOCK_TOKENS - 1) / DemoModel.BLOCK_TOKENS;
        int perRequest = 0;
        for (int g = 0; g < model.groups().size(); g++) {
            perRequest += model.heldBlocks(g, maxBlocks);
        }
        int capacity = perRequest * options.concurrency() + 1;
        String suffix = ProcessHandle.current().pid() + "-" + System.nanoTime();
        try (Arena arena = Arena.ofShared();
                KvBridge producerBridge = KvBridge.builder().transport(options.backend()).agentName("demo-prefill-" + suffix).build();
                KvBridge decoderBridge = KvBridge.builder().transport(options.backend()).agentName("demo-decode-" + suffix).build()) {
            started.accept(producerBridge, decoderBridge);
            DemoEngine producer = new DemoEngine("demo-prefill", model, producerBridge, arena, options.producerPp(), options.producerTp(), capacity);
            DemoEngine decoder = new DemoEngine("demo-decode", model, decoderBridge, arena, options.consumerPp(), options.consumerTp(), capacity);
            List<ProducerConnector> producers = new ArrayList<>();
            List<ConsumerConnector> decoders = new ArrayList<>();
            try {
                for (CacheGeometry rank : producer.ranks) {
                    producers.add(producerBridge.producer(producer.settings(rank)));
                }
                for (CacheGeometry rank : decoder.ranks) {
                    decoders.add(decoderBridge.consumer(decoder.settings(rank)));
                }
                return drive(model, producer, decoder, producers, decoders, producerBridge, decoderBridge);
            }
            finally {
                for (ConsumerConnector connector : decoders) {
                    connector.close();
                }
                for (ProducerConnector connector : producers) {
                    connector.close();
                }
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private Map<String, Object> drive(DemoModel model, DemoEngine producer, DemoEngine decoder, List<ProducerConnector> producers,
            List<ConsumerConnector> decoders, KvBridge producerBridge, KvBridge decoderBridge) throws InterruptedException
    {
        SplittableRandom random = new SplittableRandom(options.seed());
        Map<String, Active> active = new LinkedHashMap<>();
        Map<String, Integer> expired = new HashMap<>();
        long tokensNeeded = 0;
        long tokensReceived = 0;
        long parityErrors = 0;
        int completed = 0;
        int receiveFailures = 0;
        int expiredLeases = 0;
        int next = 0;
        int finished = 0;
        List<String> failures = new ArrayList<>();
        long started = System.nanoTime();
        while (finished < options.requests()) {
            boolean idle = true;
            while (next < options.requests() && active.size() < options.concurrency()) {
                int tokens = 1 + random.nextInt(options.maxTokens());
                int blocks = (tokens + DemoModel.BLOCK_TOKENS - 1) / DemoModel.BLOCK_TOKENS;
                Active request = new Active(next, tokens, blocks, producer.allocate(blocks), decoder.allocate(blocks));
                int index = next;
                producer.forEachPage(blocks, request.producerIds, (page, layer, block, offset) -> DemoEngine.fill(page, index, layer, block, offset));
                TransferParams params = null;
                for (ProducerConnector rank : producers) {
                    TransferParams own = rank.prefillFinished(request.id, BlockIds.of(request.producerIds));
                    params = params == null ? own : params;
                }
                TransferMode mode = switch (options.mode()) {
                    case "pull" -> TransferMode.PULL;
                    case "mixed" -> next % 2 == 0 ? TransferMode.PUSH : TransferMode.PULL;
                    default -> TransferMode.PUSH;
                };
                for (ConsumerConnector rank : decoders) {
                    rank.blocksAllocated("dec-" + request.id, params, mode, BlockIds.of(request.decoderIds));
                }
                tokensNeeded += tokens;
                active.put(request.id, request);
                next++;
                idle = false;
            }
            for (ProducerConnector rank : producers) {
                for (FreedRequest freed : rank.poll()) {
                    idle = false;
                    Active request = active.get(freed.requestId());
                    if (request == null) {
                        failures.add("producer freed unknown request " + freed.requestId());
                        continue;
                    }
                    if (freed.reason() == FreeReason.EXPIRED) {
                        expiredLeases++;
                        expired.merge(freed.requestId(), 1, Integer::sum);
                    }
                    else if (freed.reason() != FreeReason.COMPLETED) {
                        failures.add("producer freed " + freed.requestId() + " as " + freed.reason());
                    }
                    request.producerRanksDone++;
                }
            }
            for (ConsumerConnector rank : decoders) {
                ReceiveBatch batch = rank.poll();
                if (batch.isEmpty()) {
                    continue;
                }
                idle = false;
                for (String id : batch.received()) {
                    active.get(id.substring("dec-".length())).decoderRanksDone++;
                }
                for (ReceiveFailure failure : batch.failed()) {
                    Active request = active.get(failure.requestId().substring("dec-".length()));
                    request.failed = true;
                    request.decoderRanksDone++;
                    receiveFailures++;
                    failures.add("decoder failed " + failure.requestId() + ": " + failure.code().id() + " " + failure.message());
                }
            }
            for (Active request : List.copyOf(active.values())) {
                if (request.decoderRanksDone == decoders.size() && !request.decoderChecked) {
                    request.decoderChecked = true;
                    int index = request.index;
                    if (!request.failed) {
                        parityErrors += decoder.forEachPage(request.promptBlocks, request.decoderIds,
                                (page, layer, block, offset) -> DemoEngine.check(page, index, layer, block, offset));
                        tokensReceived += request.tokens;
                        completed++;
                    }
                    decoder.forEachPage(request.promptBlocks, request.decoderIds, (page, layer, block, offset) -> {
                        page.fill((byte) 0);
                        return 0;
                    });
                    decoder.release(request.decoderIds);
                }
                if (request.decoderChecked && request.producerRanksDone == producers.size()) {
                    producer.release(request.producerIds);
                    active.remove(request.id);
                    finished++;
                    progress.accept(finished);
                }
            }
            if (idle) {
                Thread.sleep(0, 200_000);
            }
        }
        long elapsedNanos = System.nanoTime() - started;

        // idle audit: nothing may be held a few seconds after the last request
        Thread.sleep(options.idleMillis());
        ConnectorAudit producerIdle = producerBridge.audit();
        ConnectorAudit decoderIdle = decoderBridge.audit();
        long leftover = decoder.nonZeroBytes();

        MeterRegistry producerMetrics = producerBridge.metricsRegistry(MeterRegistry.class);
        MeterRegistry decoderMetrics = decoderBridge.metricsRegistry(MeterRegistry.class);
        long transfers = summaryCount(producerMetrics, "kvbridge.transfer.bytes") + summaryCount(decoderMetrics, "kvbridge.transfer.bytes");
        long bytes = summaryTotal(producerMetrics, "kvbridge.transfer.bytes") + summaryTotal(decoderMetrics, "kvbridge.transfer.bytes");
        long descriptors = summaryTotal(producerMetrics, "kvbridge.transfer.descriptors") + summaryTotal(decoderMetrics, "kvbridge.transfer.descriptors");
        long failedTransfers = counter(producerMetrics, "kvbridge.transfer.failed") + counter(decoderMetrics, "kvbridge.transfer.failed");
        long failedNotifications = counter(producerMetrics, "kvbridge.notification.failed") + counter(decoderMetrics, "kvbridge.notification.failed");
        long expiredCounted = counter(producerMetrics, "kvbridge.lease.expired") + counter(decoderMetrics, "kvbridge.lease.expired");

        Map<String, Object> audit = new LinkedHashMap<>();
        audit.put("backend", options.backend());
        audit.put("mode", options.mode());
        audit.put("layout", options.layout());
        audit.put("model", model.identity().model());
        audit.put("requests", options.requests());
        audit.put("concurrency", options.concurrency());
        audit.put("requestsCompleted", completed);
        audit.put("transfers", transfers);
        audit.put("bytes", bytes);
        audit.put("descriptors", descriptors);
        audit.put("seconds", elapsedNanos / 1e9);
        audit.put("throughputGBps", bytes / (double) elapsedNanos);
        audit.put("failedTransfers", failedTransfers);
        audit.put("failedReceives", receiveFailures);
        audit.put("failedNotifications", failedNotifications);
        audit.put("expiredLeases", Math.max(expiredLeases, expiredCounted));
        audit.put("parityErrors", parityErrors);
        audit.put("bytesChangedOutsideRequests", leftover);
        audit.put("decoderPromptTokensNeeded", tokensNeeded);
        audit.put("decoderPromptTokensReceived", tokensReceived);
        audit.put("decoderPromptTokensComputedLocally", tokensNeeded - tokensReceived);
        audit.put("metadata", Map.of("producer", metadata(producer), "decoder", metadata(decoder)));
        audit.put("idle", Map.of("waitMillis", options.idleMillis(), "producer", idle(producerIdle, producer), "decoder", idle(decoderIdle, decoder)));
        audit.put("problems", failures.stream().limit(20).toList());
        boolean idleOk = producerIdle.idle() && decoderIdle.idle() && registrations(producer) == producerIdle.transport().registrations()
                && registrations(decoder) == decoderIdle.transport().registrations();
        boolean ok = completed == options.requests() && failedTransfers == 0 && receiveFailures == 0 && failedNotifications == 0
                && expiredLeases == 0 && expiredCounted == 0 && parityErrors == 0 && leftover == 0 && tokensReceived == tokensNeeded && failures.isEmpty()
                && idleOk;
        audit.put("idleOk", idleOk);
        audit.put("ok", ok);
        return audit;
    }

    private static Map<String, Object> metadata(DemoEngine engine)
    {
        Map<String, Object> stages = new LinkedHashMap<>();
        stages.put("ppSize", engine.ppSize);
        stages.put("tpSize", engine.tpSize);
        stages.put("layout", engine.model.layout());
        List<Map<String, Object>> ranks = new ArrayList<>();
        for (CacheGeometry rank : engine.ranks) {
            if (rank.rank().tpRank() != 0) {
                continue;
            }
            Map<String, Object> stage = new LinkedHashMap<>();
            stage.put("stage", rank.rank().ppRank());
            stage.put("layers", rank.regions().stream().mapToInt(region -> region.members().size()).sum());
            stage.put("blockTokens", rank.blockTokens());
            stage.put("regions", rank.regions().size());
            stage.put("capacityPerRegion", rank.regions().stream().map(Region::capacity).distinct().toList());
            stage.put("blockBytesPerRegion", rank.regions().stream().map(Region::blockBytes).distinct().toList());
            ranks.add(stage);
        }
        stages.put("stages", ranks);
        stages.put("cacheBytes", engine.totalBytes());
        return stages;
    }

    private static int registrations(DemoEngine engine)
    {
        return engine.ranks.stream().mapToInt(rank -> rank.allocations().size()).sum();
    }

    private static Map<String, Object> idle(ConnectorAudit audit, DemoEngine engine)
    {
        Map<String, Object> idle = new LinkedHashMap<>();
        idle.put("requests", audit.requests());
        idle.put("inFlightTransfers", audit.inFlightTransfers());
        idle.put("leasesHeld", audit.leasesHeld());
        idle.put("stashedRegistrations", audit.stashedRegistrations());
        idle.put("retainedHandles", audit.retainedHandles());
        idle.put("transportHandles", audit.transport().transfers());
        idle.put("registrations", audit.transport().registrations());
        idle.put("registrationsExpected", registrations(engine));
        idle.put("preparedLists", audit.transport().preparedLists());
        idle.put("peers", audit.transport().peers());
        return idle;
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
}
