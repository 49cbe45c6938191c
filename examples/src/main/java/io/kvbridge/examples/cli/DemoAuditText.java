package io.kvbridge.examples.cli;

import io.kvbridge.examples.demo.BlockPool;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** {@code kvbridge demo}'s audit as text: one line per figure, the metadata and idle audits, the problems and the result. */
final class DemoAuditText
{
    private DemoAuditText()
    {
    }

    /** Prints the audit that {@code --json} prints as one object. */
    @SuppressWarnings("unchecked")
    static void print(PrintWriter out, Map<String, Object> audit)
    {
        Map<String, Object> metadata = (Map<String, Object>) audit.get("metadata");
        Map<String, Object> idle = (Map<String, Object>) audit.get("idle");
        out.printf(Locale.ROOT, "kvbridge demo: %s, %s layout, %s over '%s', %d requests, %d in flight, %d process%s%n", audit.get("model"),
                audit.get("layout"), audit.get("mode"), audit.get("backend"), audit.get("requests"), audit.get("concurrency"), audit.get("processes"),
                ((Number) audit.get("processes")).intValue() == 1 ? "" : "es");
        out.printf(Locale.ROOT, "  requests completed        %d of %d%n", audit.get("requestsCompleted"), audit.get("requests"));
        out.printf(Locale.ROOT, "  discovery                 %s%n", audit.get("discovery"));
        Map<String, Object> transportOptions = (Map<String, Object>) audit.get("transportOptions");
        if (!transportOptions.isEmpty()) {
            out.printf(Locale.ROOT, "  transport options         %s%n", String.join(", ", transportOptions.entrySet().stream()
                    .map(option -> option.getKey() + "=" + option.getValue()).toList()));
        }
        Map<String, Object> hosts = (Map<String, Object>) audit.get("hosts");
        if (!hosts.isEmpty()) {
            out.printf(Locale.ROOT, "  hosts                     %s%n", String.join(", ", hosts.entrySet().stream().map(host -> host.getKey() + " " + host.getValue())
                    .toList()));
        }
        out.printf(Locale.ROOT, "  transfers / bytes         %,d / %,d%n", audit.get("transfers"), audit.get("bytes"));
        long descriptors = ((Number) audit.get("descriptors")).longValue();
        long operations = ((Number) audit.get("operations")).longValue();
        out.printf(Locale.ROOT, "  descriptors               %,d posted, %,d operations after coalescing (%.1f per operation)%n", descriptors, operations,
                operations == 0 ? 0.0 : descriptors / (double) operations);
        out.printf(Locale.ROOT, "  throughput                %.2f GB/s over %.2f s (fill and checks included)%n", audit.get("throughputGBps"),
                audit.get("seconds"));
        out.printf(Locale.ROOT, "  failed transfers          %d (receives failed: %d)%n", audit.get("failedTransfers"), audit.get("failedReceives"));
        out.printf(Locale.ROOT, "  failed notifications      %d%n", audit.get("failedNotifications"));
        out.printf(Locale.ROOT, "  expired leases            %d%n", audit.get("expiredLeases"));
        out.printf(Locale.ROOT, "  parity errors             %d bytes (every byte of every layer checked; %d bytes changed outside requests)%n",
                audit.get("parityErrors"), audit.get("bytesChangedOutsideRequests"));
        out.printf(Locale.ROOT, "  integrity                 %s%n", audit.get("integrity"));
        if (audit.get("stall") instanceof Map<?, ?> stall) {
            out.printf(Locale.ROOT, "  fault %-19s request %s failed at the decoder %s; quarantined %s, released %s; sentinel bytes changed: %s%n",
                    stall.get("fault"), stall.get("request"), stall.get("decoderFailures"), stall.get("quarantined"), stall.get("releasedOnProof"),
                    stall.get("sentinelBytesChanged"));
        }
        if (audit.get("corruption") instanceof Map<?, ?> corruption) {
            out.printf(Locale.ROOT, "  fault %-19s %s requests changed after prefillFinished, %s refused by their digests (KVB/DigestMismatch)%n",
                    corruption.get("fault"), corruption.get("requestsCorrupted"), corruption.get("refusedByDigest"));
        }
        out.printf(Locale.ROOT, "  decoder prompt tokens     %,d received / %,d needed (%,d computed locally)%n", audit.get("decoderPromptTokensReceived"),
                audit.get("decoderPromptTokensNeeded"), audit.get("decoderPromptTokensComputedLocally"));
        Map<String, Object> latency = (Map<String, Object>) audit.get("latency");
        out.printf(Locale.ROOT, "  request latency           %s (decoder: blocksAllocated to received)%n", percentiles(latency.get("request")));
        out.printf(Locale.ROOT, "  hand-over latency         %s (prefill finished to the decoder's first data in place)%n",
                percentiles(latency.get("handover")));
        Map<String, Object> ready = (Map<String, Object>) audit.get("decodeReady");
        out.printf(Locale.ROOT, "  decode-ready latency      %s (prefill start to every decoder rank received)%n", ((Number) ready.get("count")).longValue() == 0
                ? "none recorded" : String.format(Locale.ROOT, "p50 %s ms, p99 %s ms of %,d", ready.get("p50Ms"), ready.get("p99Ms"), ready.get("count")));
        Map<String, Object> prefill = (Map<String, Object>) audit.get("prefill");
        out.printf(Locale.ROOT, "  prefill                   %s, %s%n", Boolean.TRUE.equals(prefill.get("streamLayers")) ? "streamed by layer" : "reported whole",
                "none".equals(prefill.get("layerCompute")) ? "no compute" : String.format(Locale.ROOT, "%s ms %s per layer (measured %.3f ms)",
                        prefill.get("layerComputeMs"), prefill.get("layerCompute"), ((Number) prefill.get("measuredLayerMs")).doubleValue()));
        out.println("  metadata audit");
        for (String side : List.of("producer", "decoder")) {
            Map<String, Object> engine = (Map<String, Object>) metadata.get(side);
            out.printf(Locale.ROOT, "    %-8s PP%s x TP%s, %,d cache bytes in %s memory%n", side, engine.get("ppSize"), engine.get("tpSize"),
                    engine.get("cacheBytes"), engine.get("cacheMemory"));
            for (Map<String, Object> stage : (List<Map<String, Object>>) engine.get("stages")) {
                out.printf(Locale.ROOT, "      stage %s: %s layers, block size %s, %s regions, capacity %s per region, block bytes %s%n", stage.get("stage"),
                        stage.get("layers"), stage.get("blockTokens"), stage.get("regions"), stage.get("capacityPerRegion"), stage.get("blockBytesPerRegion"));
            }
            if (audit.get("blocks") instanceof Map<?, ?> pools) {
                out.printf(Locale.ROOT, "      block pool: %s%n", BlockPool.describe((Map<String, Object>) pools.get(side)));
            }
        }
        out.printf(Locale.ROOT, "  idle audit after %s ms%n", idle.get("waitMillis"));
        for (String side : List.of("producer", "decoder")) {
            out.printf(Locale.ROOT, "    %-8s %s%n", side, idle.get(side));
        }
        List<String> problems = (List<String>) audit.get("problems");
        for (String problem : problems) {
            out.println("  problem: " + problem);
        }
        out.println(Boolean.TRUE.equals(audit.get("ok")) ? "  result                    OK" : "  result                    FAILED");
    }

    /** {@return "p50 <= 20 ms, p99 <= 50 ms of 200", each the upper bound of its histogram bucket} */
    @SuppressWarnings("unchecked")
    private static String percentiles(Object value)
    {
        Map<String, Object> latency = (Map<String, Object>) value;
        long count = ((Number) latency.get("count")).longValue();
        if (count == 0) {
            return "none recorded";
        }
        return String.format(Locale.ROOT, "p50 %s, p99 %s of %,d", bound(latency.get("p50Ms")), bound(latency.get("p99Ms")), count);
    }

    private static String bound(Object milliseconds)
    {
        double value = ((Number) milliseconds).doubleValue();
        return value < 0 ? "above the last bucket" : String.format(Locale.ROOT, "<= %s ms", value == Math.rint(value) ? Long.toString((long) value) : Double.toString(value));
    }
}
