package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
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
        Set<String> seriesNames = new HashSet<>();
        Document plot = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(svg.toFile());
        assertEquals("svg", plot.getDocumentElement().getTagName());
        for (int i = 0; i < plot.getElementsByTagName("text").getLength(); i++) {
            seriesNames.add(plot.getElementsByTagName("text").item(i).getTextContent());
        }
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
    void missingCompilerIsSaidAndLeavesTheRatioEmpty() throws Exception
    {
        Path missing = directory.resolve("no-such-gcc");
        CliRun run = CliRun.of("bench", "--total-bytes", "1MiB", "--block-sizes", "64KiB", "--cc", missing.toString());
        assertEquals(0, run.exitCode(), run.err() + run.out());
        assertTrue(run.out().contains("memcpy baseline: not measured, C compiler " + missing + " not found"), run.out());
        assertTrue(run.out().contains("(ratio column left empty)"), run.out());
        assertTrue(run.out().lines().anyMatch(line -> line.startsWith("local") && line.contains("64 KiB")), run.out());
        assertFalse(Files.exists(directory.resolve("bench.svg")));
    }

    @Test
    void blockSizeThatDoesNotDivideTheTotalIsRefused()
    {
        CliRun run = CliRun.of("bench", "--total-bytes", "1MiB", "--block-sizes", "3000");
        assertEquals(2, run.exitCode(), run.out());
        assertTrue(run.err().contains("--block-sizes=3000 does not divide --total-bytes=1048576"), run.err());
    }
}
