package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

final class KvBridgeCliTest
{
    private record Run(int exitCode, String out, String err)
    {
    }

    private static Run run(String... args)
    {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = KvBridgeCli.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
        return new Run(code, out.toString(), err.toString());
    }

    @Test
    void pluginsJsonListsLocalAsAvailable() throws Exception
    {
        Run run = run("plugins", "--json");
        assertEquals(0, run.exitCode(), run.err());
        JsonNode plugins = new ObjectMapper().readTree(run.out());
        JsonNode local = null;
        for (JsonNode plugin : plugins) {
            if (plugin.get("name").asText().equals("local")) {
                local = plugin;
            }
        }
        assertTrue(local != null, run.out());
        assertEquals("transport", local.get("kind").asText());
        assertTrue(local.get("available").asBoolean());
        assertEquals(0, local.get("reasons").size());
    }

    @Test
    void pluginsListsEveryCacheLayout() throws Exception
    {
        Run run = run("plugins", "--json");
        assertEquals(0, run.exitCode(), run.err());
        Map<String, String> layouts = new TreeMap<>();
        for (JsonNode plugin : new ObjectMapper().readTree(run.out())) {
            if (plugin.get("kind").asText().equals("layout")) {
                layouts.put(plugin.get("name").asText(), plugin.get("implementation").asText());
            }
        }
        assertEquals(Map.of(
                "hma", "io.kvbridge.layout.hma.HmaCacheLayoutFactory",
                "mla", "io.kvbridge.layout.mla.MlaCacheLayoutFactory",
                "per-layer", "io.kvbridge.core.layout.PerLayerCacheLayoutFactory"), layouts, run.out());
    }

    @Test
    void demoMovesAndVerifiesEveryByte() throws Exception
    {
        Run run = run("demo", "--json", "--requests", "12", "--blocks", "192", "--layers", "3", "--block-bytes", "4096");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        JsonNode audit = new ObjectMapper().readTree(run.out());
        assertEquals(12, audit.get("requestsCompleted").asInt());
        assertEquals(0, audit.get("parityErrors").asLong());
        assertEquals(0, audit.get("failedTransfers").asInt());
        assertEquals(0, audit.get("missingNotifications").asLong());
        assertTrue(audit.get("bytes").asLong() >= 12L * 3 * 4096);
        assertTrue(audit.get("ok").asBoolean());
    }

    @Test
    void impossibleOptionsAreRefusedBeforeAnythingStarts()
    {
        Run run = run("demo", "--requests", "100", "--blocks", "10");
        assertEquals(2, run.exitCode());
        assertTrue(run.err().contains("--blocks=10 is too few"), run.err());
    }

    @Test
    void unknownBackendNamesTheAvailableOnes()
    {
        Run run = run("demo", "--backend", "carrier-pigeon", "--requests", "1", "--blocks", "16");
        assertEquals(2, run.exitCode());
        assertTrue(run.err().contains("KVB/PluginUnknown") && run.err().contains("local"), run.err());
    }
}
