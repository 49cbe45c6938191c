package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.testkit.NativeFakes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The UCX C probe next to the two-host bench's {@code ucx} rows, as two real processes on loopback:
 * the target starts the probe's target when the initiator asks, the initiator runs gets and puts
 * against it; and a probe that cannot run on either side is reported in one line while the bench
 * still reports its rows.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
final class TwoProcessProbeBenchTest
{
    private static final Path UCX_HEADER = Path.of("/usr/include/ucp/api/ucp.h");
    // a table row: OP BLOCK GB/s prepare post-p50 post-p99 xfer-p50 xfer-p99, then x memcpy, probe GB/s, x probe (x tcp may be empty)
    private static final Pattern TABLE_ROW = Pattern.compile("(?m)^(READ|WRITE) +256 KiB +([0-9.]+) +(?:[0-9.]+ +){5}([0-9.]+) +([0-9.]+) +([0-9.]+)\\b");

    @TempDir
    Path directory;

    @ParameterizedTest(name = "UCX_TLS={0}")
    @ValueSource(strings = {"tcp", "default"})
    void theInitiatorReportsTheProbeNextToEveryUcxRow(String tls) throws Exception
    {
        assumeProbeCanRun();
        Map<String, String> environment = tls.equals("default") ? Map.of() : Map.of("UCX_TLS", tls);
        // JSON over TCP, the table over the default transports: both carry the probe columns
        boolean json = tls.equals("tcp");
        Run run = run(environment, "gcc", "gcc", json);
        if (json) {
            JsonNode result = new ObjectMapper().readTree(run.out());
            JsonNode probe = result.get("probe");
            assertTrue(probe.get("available").asBoolean(), probe.toString());
            assertEquals(2, probe.get("window").asInt(), probe.toString());
            assertEquals(2, probe.get("batch").asInt(), probe.toString());
            Set<String> measured = new HashSet<>();
            for (JsonNode figure : probe.get("rows")) {
                measured.add(figure.get("op").asText() + " " + figure.get("call").asText() + " " + figure.get("blockBytes").asLong());
                assertTrue(figure.get("gbPerSecond").asDouble() > 0, figure.toString());
            }
            assertEquals(Set.of("READ ucp_get_nbx 262144", "WRITE ucp_put_nbx 262144"), measured, probe.toString());
            for (JsonNode row : result.get("rows")) {
                double probed = row.get("probeGbPerSecond").asDouble();
                assertTrue(probed > 0, row.toString());
                double ratio = row.get("gbPerSecond").asDouble() / probed;
                assertEquals(ratio, row.get("ratioToProbe").asDouble(), ratio * 0.05, row.toString());
            }
        }
        else {
            Set<String> ops = new HashSet<>();
            Matcher row = TABLE_ROW.matcher(run.out());
            while (row.find()) {
                ops.add(row.group(1));
                double gbPerSecond = Double.parseDouble(row.group(2));
                double probed = Double.parseDouble(row.group(4));
                assertTrue(probed > 0, row.group());
                // both printed with two decimals or two significant digits: the ratio agrees within their rounding
                assertEquals(gbPerSecond / probed, Double.parseDouble(row.group(5)), 0.1 * gbPerSecond / probed + 0.01, row.group());
            }
            assertEquals(Set.of("READ", "WRITE"), ops, run.out());
            assertTrue(Pattern.compile("(?m)^UCX probe baseline \\(C, this host to the target's, same run, UCX_TLS unset \\(UCX's choice\\)\\):"
                    + " get 256 KiB [0-9.]+ GB/s; put 256 KiB [0-9.]+ GB/s;$").matcher(run.out()).find(), run.out());
        }
        assertTrue(run.targetErr().contains("UCX C probe target for initiator 127.0.0.1:"), run.targetErr());
    }

    @Test
    void aTargetThatCannotBuildTheProbeSaysWhyInOneLineAndTheRowsAreStillReported() throws Exception
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        Path missing = directory.resolve("no-such-gcc");
        Run run = run(Map.of(), missing.toString(), "gcc", false);
        List<String> lines = run.out().lines().filter(line -> line.startsWith("UCX probe baseline")).toList();
        assertEquals(1, lines.size(), run.out());
        assertTrue(lines.getFirst().startsWith("UCX probe baseline: not measured, the target started no UCX probe: C compiler " + missing + " not found;"),
                run.out());
        assertTrue(lines.getFirst().endsWith("(probe columns left empty)"), run.out());
        assertTrue(Pattern.compile("(?m)^READ +256 KiB ").matcher(run.out()).find() && Pattern.compile("(?m)^WRITE +256 KiB ").matcher(run.out()).find(),
                run.out());
        assertTrue(run.targetErr().contains("no UCX C probe target for initiator 127.0.0.1:"), run.targetErr());
    }

    @Test
    void anInitiatorThatCannotBuildTheProbeSaysWhyAndTheTargetEndsItsProbe() throws Exception
    {
        assumeProbeCanRun();
        Path missing = directory.resolve("no-such-gcc");
        Run run = run(Map.of(), "gcc", missing.toString(), true);
        JsonNode result = new ObjectMapper().readTree(run.out());
        JsonNode probe = result.get("probe");
        assertTrue(!probe.get("available").asBoolean() && probe.get("reason").asText().startsWith("C compiler " + missing + " not found;"), probe.toString());
        assertTrue(probe.get("reason").asText().lines().count() == 1 && probe.get("rows").isEmpty(), probe.toString());
        assertEquals(2, result.get("rows").size(), result.toString());
        for (JsonNode row : result.get("rows")) {
            assertTrue(row.get("gbPerSecond").asDouble() > 0 && row.get("probeGbPerSecond").isNull() && row.get("ratioToProbe").isNull(), row.toString());
        }
        // the target had started its end of the probe, and ended it with the session
        assertTrue(run.targetErr().contains("UCX C probe target for initiator 127.0.0.1:"), run.targetErr());
    }

    /** What the two processes printed; both ended with exit code 0. */
    private record Run(String out, String targetErr)
    {
    }

    private Run run(Map<String, String> environment, String targetCompiler, String initiatorCompiler, boolean json) throws Exception
    {
        // UCX's tcp transport, chosen through UCX_TLS, is opened only with the opt-in
        String lane = environment.containsKey("UCX_TLS") ? "ucx.allow-unchecked-tcp-lane=true" : "ucx.allow-unchecked-tcp-lane=false";
        try (BenchChild target = BenchChild.start(directory.resolve("target"), environment, "bench", "--role", "target", "--listen", "127.0.0.1:0",
                "--total-bytes", "2MiB", "--timeout", "100s", "--cc", targetCompiler, "--transport-option", lane)) {
            int port = target.port();
            List<String> args = new java.util.ArrayList<>(List.of("bench", "--role", "initiator", "--peer", "127.0.0.1:" + port, "--total-bytes", "2MiB",
                    "--block-sizes", "256KiB", "--batch", "2", "--window", "2", "--timeout", "30s", "--cc", initiatorCompiler, "--transport-option", lane));
            if (json) {
                args.add("--json");
            }
            try (BenchChild initiator = BenchChild.start(directory.resolve("initiator"), environment, args.toArray(String[]::new))) {
                assertEquals(0, initiator.waitFor(), initiator.describe());
                assertEquals(0, target.waitFor(), target.describe());
                return new Run(initiator.out(), target.err());
            }
        }
    }

    private static void assumeProbeCanRun()
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        NativeFakes.assumeGccRuns("the UCX probe baseline is compiled at run time");
        assumeTrue(Files.isRegularFile(UCX_HEADER), UCX_HEADER + " is missing (apt-get install libucx-dev), so the UCX probe cannot be built");
    }

    private static boolean ucxAvailable()
    {
        return PluginRegistry.discover(TwoProcessProbeBenchTest.class.getClassLoader()).describe().stream()
                .anyMatch(plugin -> plugin.name().equals("ucx") && plugin.available());
    }
}
