package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.testkit.NativeFakes;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The command line over the cuda-ipc transport bound to kvbridge's fake libcuda.so.1, each run in a
 * JVM of its own started as {@code .ci/run} starts it (the driver is bound once per process): the
 * demo with both caches in "device" memory, in one process and across processes, and the bench's
 * device rows. Without a usable driver, the demo refuses in one line.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
final class CudaIpcFakeCliTest
{
    private static final String FAKE_PROPERTY = "kvbridge.cuda-ipc.test.fake";

    @TempDir
    Path directory;

    private ChildCli.Run runWithFake(String... args) throws IOException, InterruptedException
    {
        String fake = NativeFakes.require(FAKE_PROPERTY).toString();
        return ChildCli.run(directory, List.of("-Dkvbridge.cuda-ipc.library=" + fake, "-Dkvbridge.cuda-ipc.allow-fake=true"), args);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "--processes --mode pull --layout mla --consumer-tp 2"})
    void demoKeepsBothCachesInDeviceMemoryAndChecksEveryByte(String extra) throws Exception
    {
        List<String> args = new ArrayList<>(List.of("demo", "--json", "--backend", "cuda-ipc", "--requests", "8", "--max-tokens", "512", "--concurrency",
                "4", "--idle-seconds", "0.5"));
        if (!extra.isEmpty()) {
            args.addAll(List.of(extra.split(" ")));
        }
        ChildCli.Run run = runWithFake(args.toArray(String[]::new));
        assertEquals(0, run.exitCode(), run.out() + run.err());
        JsonNode audit = new ObjectMapper().readTree(run.out());
        assertEquals("cuda-ipc", audit.get("backend").asText());
        assertEquals(8, audit.get("requestsCompleted").asInt(), run.out());
        for (String side : List.of("producer", "decoder")) {
            assertEquals("device 0", audit.get("metadata").get(side).get("cacheMemory").asText(), side + ": " + run.out());
        }
        assertEquals(0, audit.get("parityErrors").asLong());
        assertEquals(0, audit.get("bytesChangedOutsideRequests").asLong());
        assertEquals(0, audit.get("failedTransfers").asLong());
        assertTrue(audit.get("bytes").asLong() > 0 && audit.get("idleOk").asBoolean(), run.out());
        assertTrue(audit.get("ok").asBoolean(), run.out());
    }

    @Test
    void demoRefusesADeviceTheDriverDoesNotHave() throws Exception
    {
        ChildCli.Run run = runWithFake("demo", "--backend", "cuda-ipc", "--device", "7", "--requests", "1");
        assertEquals(2, run.exitCode(), run.out() + run.err());
        assertTrue(run.err().contains("--device=7 is not a device 'cuda-ipc' sees"), run.err());
        assertTrue(run.out().isEmpty(), run.out());
    }

    @Test
    void withoutAUsableDriverTheDemoRefusesInOneLineNamingTheReason()
    {
        // this JVM is not given the fake, so the probe answers as on a machine without a GPU
        assumeTrue(!PluginRegistry.discover(getClass().getClassLoader()).transports().get("cuda-ipc").availability().available(),
                "a usable CUDA driver is installed here");
        CliRun run = CliRun.of("demo", "--backend", "cuda-ipc", "--processes", "--requests", "1");
        assertEquals(2, run.exitCode(), run.out() + run.err());
        // the refusal in one line, then the pointer to --help every usage error ends with
        List<String> lines = run.err().lines().toList();
        assertEquals(2, lines.size(), run.err());
        assertTrue(lines.getFirst().startsWith("kvbridge demo: ") && lines.getFirst().contains("--backend=cuda-ipc is not available here: "), run.err());
        assertTrue(lines.get(1).startsWith("Try 'kvbridge demo --help'"), run.err());
        assertTrue(run.out().isEmpty(), run.out());
    }

    @Test
    void benchPrintsDeviceRowsLabelledAsTheFakeNextToTheCBaseline() throws Exception
    {
        ChildCli.Run run = runWithFake("bench", "--json", "--total-bytes", "1MiB", "--block-sizes", "64KiB,1MiB");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        JsonNode result = new ObjectMapper().readTree(run.out());
        Set<Long> deviceSizes = new HashSet<>();
        for (JsonNode row : result.get("rows")) {
            if (row.get("transport").asText().equals("cuda-ipc") && row.get("memory").asText().equals("device 0")) {
                deviceSizes.add(row.get("blockBytes").asLong());
                assertEquals("fake", row.get("driver").asText(), row.toString());
                assertTrue(row.get("gbPerSecond").asDouble() > 0, row.toString());
                assertEquals(1024L * 1024 / row.get("blockBytes").asLong(), row.get("transfers").asLong(), row.toString());
                assertTrue(row.get("p99Micros").asDouble() >= row.get("p50Micros").asDouble(), row.toString());
            }
        }
        assertEquals(Set.of(65536L, 1048576L), deviceSizes, run.out());
        JsonNode baseline = result.get("deviceBaseline");
        assertEquals("fake", baseline.get("driver").asText());
        if (baseline.get("available").asBoolean()) {
            assertEquals(2, baseline.get("rows").size(), baseline.toString());
            for (JsonNode row : result.get("rows")) {
                if (row.get("memory").asText().equals("device 0")) {
                    assertTrue(row.get("ratioToProbe").asDouble() > 0, row.toString());
                }
            }
        }
        else {
            String reason = baseline.get("reason").asText();
            assertTrue(reason.contains("cuda.h") || reason.contains("gcc"), reason);
        }
        JsonNode costs = result.get("issueCost");
        assertEquals(2, costs.size(), costs.toString());
        for (JsonNode cost : costs) {
            assertEquals(5120, cost.get("descriptors").asInt());
            assertTrue(cost.get("doneMicros").asDouble() >= cost.get("postMicros").asDouble() && cost.get("postMicros").asDouble() > 0, cost.toString());
            // a coalescing transport merges the adjacent pairs into one copy and none of the spaced ones
            assertEquals(cost.get("contiguous").asBoolean() ? 1 : 5120, cost.get("operations").asInt(), cost.toString());
        }
        assertFalse(result.get("skipped").toString().contains("cuda-ipc"), result.get("skipped").toString());
    }
}
