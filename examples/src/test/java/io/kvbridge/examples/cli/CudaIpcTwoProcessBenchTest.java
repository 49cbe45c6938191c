package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.testkit.NativeFakes;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvbridge bench --role target|initiator --transport cuda-ipc} with device memory on both
 * sides, two JVMs on one host over kvbridge's fake libcuda.so.1 (the driver is bound once per
 * process, so each side gets it as {@code .ci/run} gives it: system properties of its JVM); and the
 * device options that cannot work, refused before anything starts.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
final class CudaIpcTwoProcessBenchTest
{
    private static final String FAKE_PROPERTY = "kvbridge.cuda-ipc.test.fake";

    @TempDir
    Path directory;

    private static List<String> fakeDriver()
    {
        String fake = NativeFakes.require(FAKE_PROPERTY).toString();
        return List.of("-Dkvbridge.cuda-ipc.library=" + fake, "-Dkvbridge.cuda-ipc.allow-fake=true");
    }

    @Test
    void initiatorReadsAndWritesTheTargetsDeviceMemoryFromItsOwnAndEveryPassIsChecked() throws Exception
    {
        List<String> fake = fakeDriver();
        try (BenchChild target = BenchChild.start(directory.resolve("target"), Map.of(), fake, "bench", "--role", "target", "--listen", "127.0.0.1:0",
                "--transport", "cuda-ipc", "--device", "0", "--total-bytes", "2MiB", "--timeout", "60s", "--cc", "no-such-gcc")) {
            int port = target.port();
            try (BenchChild initiator = BenchChild.start(directory.resolve("initiator"), Map.of(), fake, "bench", "--role", "initiator", "--peer",
                    "127.0.0.1:" + port, "--transport", "cuda-ipc", "--device", "0", "--total-bytes", "2MiB", "--block-sizes", "64KiB,1MiB", "--batch", "2",
                    "--json", "--timeout", "30s", "--cc", "no-such-gcc")) {
                // a pass whose bytes differ where they landed fails the run: exit 0 means every one was checked and matched
                assertEquals(0, initiator.waitFor(), initiator.describe());
                assertEquals(0, target.waitFor(), target.describe());
                JsonNode result = new ObjectMapper().readTree(initiator.out());
                assertEquals("cuda-ipc", result.get("transport").asText());
                assertEquals("device 0", result.get("memory").asText(), result.toString());
                assertEquals("device 0", result.get("targetMemory").asText(), result.toString());
                assertEquals("fake", result.get("driver").asText(), result.toString());
                Set<String> measured = new HashSet<>();
                for (JsonNode row : result.get("rows")) {
                    long block = row.get("blockBytes").asLong();
                    measured.add(row.get("op").asText() + " " + block);
                    assertEquals("device 0", row.get("memory").asText(), row.toString());
                    assertEquals("device 0", row.get("targetMemory").asText(), row.toString());
                    assertEquals((2L << 20) / block / 2, row.get("transfers").asLong(), row.toString());
                    assertTrue(row.get("gbPerSecond").asDouble() > 0, row.toString());
                    assertTrue(row.get("transferP99Micros").asDouble() >= row.get("transferP50Micros").asDouble(), row.toString());
                    assertTrue(row.get("ratioToMemcpy").isNull(), row.toString());
                }
                assertEquals(Set.of("READ 65536", "WRITE 65536", "READ 1048576", "WRITE 1048576"), measured, initiator.out());
                assertTrue(result.get("baseline").get("reason").asText().contains("device memory, which a host memcpy says nothing about"),
                        result.get("baseline").toString());
                assertTrue(target.err().contains("2 MiB of device 0 memory"), target.err());
                assertTrue(target.err().contains("finished; done"), target.err());
                assertTrue(initiator.err().contains("2 MiB of device 0 memory granted"), initiator.err());
            }
        }
    }

    @Test
    void aDeviceTheDriverDoesNotHaveIsRefusedInOneLineBeforeAnythingStarts() throws Exception
    {
        ChildCli.Run run = ChildCli.run(directory, fakeDriver(), "bench", "--role", "target", "--listen", "127.0.0.1:0", "--transport", "cuda-ipc",
                "--device", "7", "--total-bytes", "1MiB");
        assertEquals(KvBridgeCli.USAGE, run.exitCode(), run.out() + run.err());
        assertTrue(run.err().lines().findFirst().orElse("").contains("--device=7 is not a device 'cuda-ipc' sees (it sees 1: 0 to 0)"), run.err());
    }

    @Test
    void deviceMemoryOnATransportWithoutItIsRefusedInOneLine()
    {
        CliRun run = CliRun.of("bench", "--role", "target", "--listen", "127.0.0.1:0", "--transport", "ucx", "--device", "0", "--total-bytes", "1MiB");
        assertEquals(KvBridgeCli.USAGE, run.exitCode(), run.err());
        String line = run.err().lines().findFirst().orElse("");
        // where ucx cannot run here, that is said first
        assertTrue(line.contains("--device=0 needs a transport that allocates device memory (cuda-ipc); --transport=ucx keeps this side's buffer in host"
                + " memory") || line.contains("--transport=ucx cannot run here"), run.err());
    }
}
