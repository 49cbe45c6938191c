package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.core.plugin.PluginRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class BenchCommandTest
{
    @TempDir
    Path directory;

    @Test
    void benchReportsLocalRowsBaselineAndAPlot() throws Exception
    {
        Path svg = directory.resolve("bench.svg");
        CliRun run = CliRun.of("bench", "--json", "--total-bytes", "8MiB", "--block-sizes", "4KiB,256KiB", "--plot", svg.toString());
        assertEquals(0, run.exitCode(), run.err() + run.out());
        JsonNode result = new ObjectMapper().readTree(run.out());

        Set<Long> localSizes = new HashSet<>();
        for (JsonNode row : result.get("rows")) {
            if (row.get("transport").asText().equals("local")) {
                localSizes.add(row.get("blockBytes").asLong());
                assertTrue(row.get("gbPerSecond").asDouble() > 0, row.toString());
                assertEquals(8L * 1024 * 1024 / row.get("blockBytes").asLong(), row.get("transfers").asLong(), row.toString());
                assertTrue(row.get("p50Micros").asDouble() > 0 && row.get("p99Micros").asDouble() >= row.get("p50Micros").asDouble(), row.toString());
            }
        }
        assertEquals(Set.of(4096L, 262144L), localSizes, run.out());

        JsonNode baseline = result.get("baseline");
        Set<String> seriesNames = legendOf(svg);
        assertTrue(seriesNames.contains("local"), seriesNames.toString());
        if (baseline.get("available").asBoolean()) {
            assertEquals(2, baseline.get("rows").size(), baseline.toString());
            for (JsonNode row : baseline.get("rows")) {
                assertTrue(row.get("gbPerSecond").asDouble() > 0, row.toString());
            }
            assertTrue(seriesNames.contains("memcpy (1 thread)"), seriesNames.toString());
            for (JsonNode row : result.get("rows")) {
                assertTrue(row.get("ratioToMemcpy").asDouble() > 0, row.toString());
            }
        }
        else {
            assertTrue(baseline.get("reason").asText().contains("gcc"), baseline.toString());
        }
    }

    @Test
    void ucxRowsShowTheProbeMeasuredInTheSameRunAndTheRatioToIt() throws Exception
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        assumeTrue(ucxHeadersCompile(), "gcc or the UCX headers (libucx-dev) are missing here");
        Path svg = directory.resolve("bench.svg");
        CliRun run = CliRun.of("bench", "--json", "--total-bytes", "4MiB", "--block-sizes", "32KiB,1MiB", "--plot", svg.toString());
        assertEquals(0, run.exitCode(), run.err() + run.out());
        JsonNode result = new ObjectMapper().readTree(run.out());

        JsonNode probe = result.get("probe");
        assertTrue(probe.get("available").asBoolean(), probe.toString());
        assertEquals("ucx", probe.get("transport").asText(), probe.toString());
        Map<Long, Double> probed = new HashMap<>();
        for (JsonNode row : probe.get("rows")) {
            assertTrue(row.get("gbPerSecond").asDouble() > 0, row.toString());
            probed.put(row.get("blockBytes").asLong(), row.get("gbPerSecond").asDouble());
        }
        assertEquals(Set.of(32768L, 1048576L), probed.keySet(), probe.toString());
        JsonNode tcpStream = result.get("tcpStream");
        assertTrue(tcpStream.get("available").asBoolean(), tcpStream.toString());
        Map<Long, Double> streamed = new HashMap<>();
        for (JsonNode row : tcpStream.get("rows")) {
            assertTrue(row.get("gbPerSecond").asDouble() > 0, row.toString());
            streamed.put(row.get("blockBytes").asLong(), row.get("gbPerSecond").asDouble());
        }
        assertEquals(probed.keySet(), streamed.keySet(), tcpStream.toString());

        Set<Long> ucxSizes = new HashSet<>();
        Set<Long> tcpSizes = new HashSet<>();
        for (JsonNode row : result.get("rows")) {
            String transport = row.get("transport").asText();
            long size = row.get("blockBytes").asLong();
            if (transport.equals("ucx")) {
                ucxSizes.add(size);
                double probeFigure = row.get("probeGbPerSecond").asDouble();
                assertEquals(probed.get(size), probeFigure, 0.0, row.toString());
                // the document keeps 4 significant digits of the transport's figure and of the ratio, taken before rounding
                double expected = row.get("gbPerSecond").asDouble() / probeFigure;
                assertEquals(expected, row.get("ratioToProbe").asDouble(), 0.002 + expected * 0.02, row.toString());
                assertTrue(row.get("ratioToProbe").asDouble() > 0, row.toString());
            }
            else {
                assertTrue(row.get("probeGbPerSecond").isNull() && row.get("ratioToProbe").isNull(), row.toString());
            }
            if (transport.equals("ucx") || transport.equals("tcp")) {
                // both move bytes over TCP here, so both rows stand against the one stream measured in this run
                if (transport.equals("tcp")) {
                    tcpSizes.add(size);
                }
                assertEquals(streamed.get(size), row.get("tcpGbPerSecond").asDouble(), 0.0, row.toString());
                double expectedToTcp = row.get("gbPerSecond").asDouble() / streamed.get(size);
                assertEquals(expectedToTcp, row.get("ratioToTcp").asDouble(), 0.002 + expectedToTcp * 0.02, row.toString());
            }
            else {
                assertTrue(row.get("tcpGbPerSecond").isNull() && row.get("ratioToTcp").isNull(), row.toString());
            }
        }
        assertEquals(Set.of(32768L, 1048576L), ucxSizes, run.out());
        assertEquals(Set.of(32768L, 1048576L), tcpSizes, run.out());
        assertTrue(legendOf(svg).containsAll(Set.of("UCX C probe (put)", "one TCP stream (C, loopback)")), legendOf(svg).toString());
    }

    @Test
    void missingCompilerIsSaidAndLeavesTheRatiosEmpty() throws Exception
    {
        Path missing = directory.resolve("no-such-gcc");
        CliRun run = CliRun.of("bench", "--total-bytes", "1MiB", "--block-sizes", "64KiB", "--cc", missing.toString());
        assertEquals(0, run.exitCode(), run.err() + run.out());
        assertTrue(run.out().contains("memcpy baseline: not measured, C compiler " + missing + " not found"), run.out());
        assertTrue(run.out().contains("(ratio column left empty)"), run.out());
        assertTrue(run.out().lines().anyMatch(line -> line.startsWith("local") && line.contains("64 KiB")), run.out());
        // the tcp transport, pure Java, is always there to be measured against one TCP stream: only the compiler is missing
        assertTrue(run.out().contains("TCP stream baseline: not measured, C compiler " + missing
                + " not found; install gcc (apt-get install gcc) to measure the TCP stream baseline (x tcp column left empty)"), run.out());
        if (ucxAvailable()) {
            assertTrue(run.out().contains("UCX probe baseline: not measured, C compiler " + missing
                    + " not found; install gcc and libucx-dev (apt-get install gcc libucx-dev) to measure the UCX probe baseline (probe columns left empty)"), run.out());
            assertTrue(run.out().lines().anyMatch(line -> line.startsWith("ucx") && line.contains("64 KiB")), run.out());
        }
        else {
            assertTrue(run.out().contains("UCX probe baseline: not measured, the ucx transport is not available here"), run.out());
        }
        assertFalse(Files.exists(directory.resolve("bench.svg")));
    }

    @Test
    void probeWithoutUcxHeadersNamesThePackageToInstall() throws Exception
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        assumeTrue(ucxHeadersCompile(), "gcc or the UCX headers (libucx-dev) are missing here");
        // the real gcc, searching only an empty include directory for the probe: what a machine without libucx-dev gives
        Path emptyIncludes = Files.createDirectory(directory.resolve("empty-include"));
        Path compiler = directory.resolve("gcc-without-ucx-headers");
        Files.writeString(compiler, """
                #!/bin/sh
                case "$*" in
                    *ucx_probe.c*) exec gcc -nostdinc -isystem '%s' "$@" ;;
                    *) exec gcc "$@" ;;
                esac
                """.formatted(emptyIncludes), StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(compiler, PosixFilePermissions.fromString("rwx------"));

        CliRun run = CliRun.of("bench", "--json", "--total-bytes", "1MiB", "--block-sizes", "64KiB", "--cc", compiler.toString());
        assertEquals(0, run.exitCode(), run.err() + run.out());
        JsonNode result = new ObjectMapper().readTree(run.out());
        JsonNode probe = result.get("probe");
        assertFalse(probe.get("available").asBoolean(), probe.toString());
        String reason = probe.get("reason").asText();
        assertTrue(reason.contains("ucp/api/ucp.h") && reason.endsWith("install libucx-dev (apt-get install libucx-dev) to measure the UCX probe baseline"), reason);
        assertTrue(result.get("baseline").get("available").asBoolean(), result.get("baseline").toString());
        for (JsonNode row : result.get("rows")) {
            assertTrue(row.get("probeGbPerSecond").isNull() && row.get("ratioToProbe").isNull(), row.toString());
            assertTrue(row.get("ratioToMemcpy").asDouble() > 0, row.toString());
        }
        assertTrue(result.get("rows").findValuesAsText("transport").contains("ucx"), run.out());
    }

    @Test
    void readSweepReportsARowPerBatchWithTheGivenPasses() throws Exception
    {
        Path svg = directory.resolve("read.svg");
        // a missing compiler skips the C baselines: this run is about the transports' rows
        CliRun run = CliRun.of("bench", "--json", "--op", "READ", "--batch", "1,4", "--iterations", "2", "--warmup", "1", "--block-sizes", "4KiB",
                "--total-bytes", "1MiB", "--cc", directory.resolve("no-cc").toString(), "--plot", svg.toString());
        assertEquals(0, run.exitCode(), run.err() + run.out());
        JsonNode result = new ObjectMapper().readTree(run.out());
        assertEquals("READ", result.get("op").asText(), run.out());
        assertEquals(2, result.get("iterations").asInt(), run.out());
        assertEquals(1, result.get("warmup").asInt(), run.out());
        Map<Integer, Long> localTransfers = new HashMap<>();
        for (JsonNode row : result.get("rows")) {
            assertEquals("READ", row.get("op").asText(), row.toString());
            if (row.get("transport").asText().equals("local")) {
                assertTrue(row.get("gbPerSecond").asDouble() > 0, row.toString());
                localTransfers.put(row.get("batch").asInt(), row.get("transfers").asLong());
            }
        }
        // 256 blocks of 4 KiB: one post each, or one per 4
        assertEquals(Map.of(1, 256L, 4, 64L), localTransfers, run.out());
        Set<String> legend = legendOf(svg);
        assertTrue(legend.containsAll(Set.of("local batch 1", "local batch 4")), legend.toString());
        assertTrue(legend.stream().anyMatch(text -> text.startsWith("kvbridge READ throughput") && text.endsWith("best of 2")), legend.toString());
    }

    @Test
    void textTableShowsTheOperationBatchAndPasses()
    {
        CliRun run = CliRun.of("bench", "--op", "read", "--batch", "2", "--iterations", "1", "--warmup", "0", "--block-sizes", "64KiB",
                "--total-bytes", "1MiB", "--cc", directory.resolve("no-cc").toString());
        assertEquals(0, run.exitCode(), run.err() + run.out());
        assertTrue(run.out().contains("READ, 1 MiB streamed per block size, BATCH blocks per transfer, 0 untimed pass(es), then the best of 1 timed"), run.out());
        assertTrue(run.out().lines().anyMatch(line -> line.matches("local\\s+64 KiB\\s+2\\s.*")), run.out());
    }

    @Test
    void blockSizeThatDoesNotDivideTheTotalIsRefused()
    {
        CliRun run = CliRun.of("bench", "--total-bytes", "1MiB", "--block-sizes", "3000");
        assertEquals(2, run.exitCode(), run.out());
        assertTrue(run.err().contains("--block-sizes=3000 does not divide --total-bytes=1048576"), run.err());
    }

    private static boolean ucxAvailable()
    {
        return PluginRegistry.discover(BenchCommandTest.class.getClassLoader()).describe().stream()
                .anyMatch(plugin -> plugin.name().equals("ucx") && plugin.available());
    }

    /** Whether gcc can preprocess the UCX header the probe includes. */
    private static boolean ucxHeadersCompile() throws InterruptedException
    {
        try {
            Process gcc = new ProcessBuilder("gcc", "-E", "-x", "c", "-o", "/dev/null", "-").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            try (OutputStream in = gcc.getOutputStream()) {
                in.write("#include <ucp/api/ucp.h>\n".getBytes(StandardCharsets.UTF_8));
            }
            return gcc.waitFor(60, TimeUnit.SECONDS) && gcc.exitValue() == 0;
        }
        catch (IOException e) {
            return false;
        }
    }

    private static Set<String> legendOf(Path svg) throws Exception
    {
        Document plot = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(svg.toFile());
        assertEquals("svg", plot.getDocumentElement().getTagName());
        Set<String> texts = new HashSet<>();
        for (int i = 0; i < plot.getElementsByTagName("text").getLength(); i++) {
            texts.add(plot.getElementsByTagName("text").item(i).getTextContent());
        }
        return texts;
    }
}
