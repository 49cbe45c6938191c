package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code demo --kv-transfer-config}: the document's settings reach both engines, as the audit shows. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class DemoTransferConfigTest
{
    private static final String DOCUMENT = "{\"kv_connector\":\"kvbridge\",\"kv_connector_extra_config\":{\"transport\":\"local\","
            + "\"transports\":{\"local\":{\"max-in-flight\":32}},\"integrity\":\"crc32c\"}}";

    @TempDir
    Path directory;

    @Test
    void inlineDocumentConfiguresTheEngines() throws Exception
    {
        assertApplied(DOCUMENT);
    }

    @Test
    void documentInAFileByPathOrAtSign() throws Exception
    {
        Path file = directory.resolve("kv-transfer-config.json");
        Files.writeString(file, DOCUMENT);
        assertApplied(file.toString());
        assertApplied("@" + file);
    }

    private static void assertApplied(String value) throws Exception
    {
        // integrity=crc32c compares one rank's blocks with one rank's: one stage on each side
        CliRun run = CliRun.of("demo", "--json", "--requests", "4", "--max-tokens", "512", "--idle-seconds", "0", "--producer-pp", "1",
                "--kv-transfer-config", value);
        assertEquals(0, run.exitCode(), run.err() + run.out());
        JsonNode audit = new ObjectMapper().readTree(run.out());
        assertEquals("local", audit.get("backend").asText(), run.out());
        assertEquals("crc32c", audit.get("integrity").asText(), run.out());
        assertEquals("32", audit.get("transportOptions").get("max-in-flight").asText(), run.out());
        assertEquals(4, audit.get("requestsCompleted").asInt(), run.out());
    }
}
