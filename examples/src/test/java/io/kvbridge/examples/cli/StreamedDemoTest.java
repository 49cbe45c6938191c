package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.examples.demo.DemoOptions;
import io.kvbridge.examples.demo.Ucx;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code kvbridge demo --stream-layers --layer-compute}: every byte of a streamed request arrives,
 * pushed, pulled or mixed, over each transport and on each layout and shape the engine streams, the audit carries each
 * request's decode-ready time streamed or not, and what cannot stream is refused up front.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class StreamedDemoTest
{
    /** Small runs: 8 requests of up to 600 tokens (some below streamMinTokens, most above), 30 layers of 1 ms each. */
    private static final List<String> SMALL = List.of("--json", "--requests", "8", "--concurrency", "4", "--max-tokens", "600", "--idle-seconds", "0.2");

    /** Every shape the engine streams, each pushed, pulled and mixed (every other request pulled). */
    static Stream<Arguments> streamedShapes()
    {
        List<String> shapes = List.of(
                "local|--layout hma",
                "tcp|--layout hma",
                "local|--layout mla --producer-pp 1",
                "local|--layout per-layer --producer-tp 2 --consumer-tp 1",
                "local|--layout per-layer --placement cross-layer --producer-pp 1",
                "local|--layout per-layer --kv-planes split:blockwise --block-tokens 16:32 --consumer-pp 2",
                "local|--model hybrid-ssm --layout hma");
        return DemoOptions.MODES.stream().flatMap(mode -> shapes.stream().map(shape -> shape.split("\\|")).map(shape -> Arguments.of(mode, shape[0], shape[1])));
    }

    @ParameterizedTest(name = "{0} {1} {2}")
    @MethodSource("streamedShapes")
    void everyStreamedByteArrives(String mode, String backend, String shape) throws Exception
    {
        JsonNode audit = clean(demo(backend, "--mode " + mode + " --stream-layers --layer-compute 1ms " + shape), 8);
        assertEquals(mode, audit.get("mode").asText());
        assertTrue(audit.get("prefill").get("streamLayers").asBoolean());
        // 30 layers of at least 1 ms each, for every request
        assertTrue(audit.get("decodeReady").get("p50Ms").asDouble() >= 30, audit.get("decodeReady").toString());
        assertTrue(audit.get("prefill").get("measuredLayerMs").asDouble() >= 1, audit.get("prefill").toString());
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', value = {"ucx|push", "ucx|mixed"})
    void streamsBetweenProcesses(String backend, String mode) throws Exception
    {
        if (backend.equals("ucx")) {
            Ucx.assumeAvailable();
        }
        JsonNode audit = clean(demo(backend, "--processes --mode " + mode + " --stream-layers --layer-compute 1ms"), 8);
        assertTrue(audit.get("decodeReady").get("p50Ms").asDouble() >= 30, audit.get("decodeReady").toString());
    }

    @Test
    void decodeReadyIsReportedWhetherStreamedOrNot() throws Exception
    {
        for (String prefill : List.of("--layer-compute 1ms", "--stream-layers", "--requests 8")) {
            JsonNode audit = clean(demo("local", prefill), 8);
            JsonNode decodeReady = audit.get("decodeReady");
            assertEquals(8, decodeReady.get("count").asInt(), prefill + ": " + decodeReady);
            double p50 = decodeReady.get("p50Ms").asDouble();
            assertTrue(p50 > 0 && p50 <= decodeReady.get("p99Ms").asDouble(), prefill + ": " + decodeReady);
        }
    }

    @Test
    void theTextAuditNamesThePrefillAndItsDecodeReadyTimes()
    {
        CliRun run = CliRun.of("demo", "--requests", "4", "--max-tokens", "300", "--idle-seconds", "0", "--stream-layers", "--layer-compute", "1ms");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().matches("(?s).*decode-ready latency +p50 [0-9.]+ ms, p99 [0-9.]+ ms of 4 .*"), run.out());
        assertTrue(run.out().matches("(?s).*prefill +streamed by layer, 1.0 ms sleep per layer \\(measured [0-9.]+ ms\\).*"), run.out());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "--integrity crc32c --producer-pp 1|--stream-layers cannot be combined with --integrity crc32c: a block's digest needs its final bytes",
            "--fault corrupt:2|--fault=corrupt:2 acts on a prefill that ends at once",
            "--layer-compute 1s --concurrency 8|--stream-layers holds each request under its lease from prefillStarted, and with --concurrency=8 a "
                    + "prefill of 30 layers x 1000.0 ms may wait for the others: 240000 ms must stay below half of --lease-seconds=30.0"})
    void refusesWhatCannotStreamUpFront(String extra, String message)
    {
        List<String> args = new ArrayList<>(List.of("demo", "--stream-layers", "--requests", "4"));
        args.addAll(List.of(extra.split(" ")));
        CliRun run = CliRun.of(args.toArray(String[]::new));
        assertEquals(2, run.exitCode(), run.out() + run.err());
        assertTrue(run.err().contains(message), run.err());
        assertEquals(1, run.err().lines().filter(line -> line.contains("--stream-layers") || line.contains("--fault")).count(), run.err());
    }

    private static CliRun demo(String backend, String extra)
    {
        List<String> args = new ArrayList<>(List.of("demo", "--backend", backend));
        args.addAll(SMALL);
        args.addAll(List.of(extra.split(" ")));
        return CliRun.of(args.toArray(String[]::new));
    }

    private static JsonNode clean(CliRun run, int requests) throws Exception
    {
        assertEquals(0, run.exitCode(), run.out() + run.err());
        JsonNode audit = new ObjectMapper().readTree(run.out());
        assertTrue(audit.get("ok").asBoolean(), run.out());
        assertEquals(requests, audit.get("requestsCompleted").asInt(), run.out());
        assertEquals(0, audit.get("parityErrors").asLong(), run.out());
        assertEquals(0, audit.get("failedTransfers").asLong(), run.out());
        assertEquals(requests, audit.get("decodeReady").get("count").asInt(), run.out());
        return audit;
    }
}
