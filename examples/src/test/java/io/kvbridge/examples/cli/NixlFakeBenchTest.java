package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.testkit.NativeFakes;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvbridge bench} over the nixl transport bound to the test fake of {@code libnixl_capi.so}:
 * the nixl rows sit next to the C probe that drives the same library directly, compiled and run in
 * the same bench, and both are labelled as the fake's.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
final class NixlFakeBenchTest
{
    private static final String FAKE_PROPERTY = "kvbridge.nixl.test.fake";

    @TempDir
    Path directory;

    @Test
    void nixlRowsAreComparedWithTheCProbeOnTheSameLibrary() throws Exception
    {
        String fake = NativeFakes.require(FAKE_PROPERTY).toString();
        ChildCli.Run run = ChildCli.run(directory, List.of("-Dkvbridge.nixl.library=" + fake, "-Dkvbridge.nixl.allow-fake=true"), "bench", "--json",
                "--total-bytes", "1MiB", "--block-sizes", "64KiB,1MiB", "--transport-option", "nixl.allow-unchecked-tcp-lane=true");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        JsonNode result = new ObjectMapper().readTree(run.out());
        JsonNode probe = result.get("nixlProbe");
        assertEquals("nixl_probe", probe.get("name").asText());
        if (!probe.get("available").asBoolean()) {
            // only a missing compiler may keep it from running here
            assertTrue(probe.get("reason").asText().contains("gcc"), probe.toString());
            return;
        }
        assertEquals(2, probe.get("rows").size(), probe.toString());
        JsonNode perBlock = result.get("nixlProbePerBlock");
        assertTrue(perBlock.get("available").asBoolean(), perBlock.toString());
        assertEquals(2, perBlock.get("rows").size(), perBlock.toString());
        Set<Long> sizes = new HashSet<>();
        for (JsonNode row : result.get("rows")) {
            if (row.get("transport").asText().equals("nixl")) {
                sizes.add(row.get("blockBytes").asLong());
                assertEquals("fake", row.get("driver").asText(), row.toString());
                assertTrue(row.get("probeGbPerSecond").asDouble() > 0 && row.get("ratioToProbe").asDouble() > 0, row.toString());
                assertTrue(row.get("perBlockProbeGbPerSecond").asDouble() > 0 && row.get("ratioToPerBlockProbe").asDouble() > 0, row.toString());
            }
        }
        assertEquals(Set.of(65536L, 1048576L), sizes, run.out());
    }
}
