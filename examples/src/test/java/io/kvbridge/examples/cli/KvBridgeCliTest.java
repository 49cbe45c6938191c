package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.examples.demo.Ucx;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class KvBridgeCliTest
{
    @Test
    void pluginsJsonListsLocalAsAvailable() throws Exception
    {
        CliRun run = CliRun.of("plugins", "--json");
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
    void configWithoutASubcommandIsAUsageErrorAsAtTheTopLevel()
    {
        CliRun config = CliRun.of("config");
        assertEquals(KvBridgeCli.USAGE, config.exitCode(), config.out() + config.err());
        assertEquals("", config.out());
        assertTrue(config.err().contains("validate"), config.err());
        assertEquals(KvBridgeCli.USAGE, CliRun.of().exitCode());
    }

    @Test
    void versionIsTheBuildsOwnVersionWhenRunFromTheJar()
    {
        CliRun run = CliRun.of("-V");
        assertEquals(0, run.exitCode(), run.err());
        String stamped = KvBridgeCli.class.getPackage().getImplementationVersion();
        // the tests run from target/classes, which has no manifest: the jar the launcher runs does
        assertEquals("kvbridge " + (stamped == null ? "(version unknown: not run from the built jar)" : stamped), run.out().strip());
    }

    @Test
    void everyCommandPrintsTheSameVersion()
    {
        String version = CliRun.of("-V").out();
        for (String[] command : new String[][] {{"demo", "-V"}, {"bench", "-V"}, {"config", "-V"}, {"config", "init", "-V"}, {"plugins", "--version"},
                {"inspect", "-V"}, {"completion", "-V"}}) {
            CliRun run = CliRun.of(command);
            assertEquals(0, run.exitCode(), run.err());
            assertEquals(version, run.out(), String.join(" ", command));
        }
    }

    @Test
    void aDiscoveryEndpointThatAcceptsConnectionsIsReachableAsTheLocationGivesIt() throws Exception
    {
        try (java.net.ServerSocket listening = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            // DirectoryConfig keeps its endpoints unresolved, as here
            java.net.InetSocketAddress served = java.net.InetSocketAddress.createUnresolved("127.0.0.1", listening.getLocalPort());
            java.net.InetSocketAddress dead = java.net.InetSocketAddress.createUnresolved("127.0.0.1", 1);
            assertEquals(null, DemoCommand.unreachable(List.of(dead, served)));
            assertTrue(DemoCommand.unreachable(List.of(dead)).contains("127.0.0.1:1: Connection refused"), DemoCommand.unreachable(List.of(dead)));
        }
    }

    @Test
    void durationsAreAcceptedWhereSecondsAre()
    {
        assertEquals(5.0, new ParsedTextConverter.SecondsConverter().convert("5s"));
        assertEquals(0.5, new ParsedTextConverter.SecondsConverter().convert("500ms"));
        assertEquals(30.0, new ParsedTextConverter.SecondsConverter().convert("30"));
        assertEquals(0.25, new ParsedTextConverter.SecondsConverter().convert("0.25"));
        CliRun run = CliRun.of("demo", "--lease-seconds", "5s", "--requests", "2", "--max-tokens", "64", "--idle-seconds", "100ms");
        assertEquals(0, run.exitCode(), run.out() + run.err());
    }

    @Test
    void pluginsListsEveryCacheLayout() throws Exception
    {
        CliRun run = CliRun.of("plugins", "--json");
        assertEquals(0, run.exitCode(), run.err());
        Map<String, String> layouts = new TreeMap<>();
        for (JsonNode plugin : new ObjectMapper().readTree(run.out())) {
            if (plugin.get("kind").asText().equals("layout")) {
                layouts.put(plugin.get("name").asText(), plugin.get("implementation").asText());
            }
        }
        assertEquals(Map.of(
                "hma", "io.kvbridge.layout.hma.HmaCacheLayoutFactory",
                "jlama", "io.kvbridge.engine.jlama.layout.JlamaCacheLayoutFactory",
                "mla", "io.kvbridge.layout.mla.MlaCacheLayoutFactory",
                "per-layer", "io.kvbridge.core.layout.PerLayerCacheLayoutFactory"), layouts, run.out());
    }

    @Test
    void pluginsListsTheDiscoveryPluginsByScheme() throws Exception
    {
        CliRun run = CliRun.of("plugins", "--json");
        assertEquals(0, run.exitCode(), run.err());
        Map<String, String> discovery = new TreeMap<>();
        for (JsonNode plugin : new ObjectMapper().readTree(run.out())) {
            if (plugin.get("kind").asText().equals("discovery")) {
                discovery.put(plugin.get("name").asText(), plugin.get("implementation").asText());
            }
        }
        assertEquals(Map.of("etcd", "io.kvbridge.discovery.etcd.EtcdDirectoryFactory"), discovery, run.out());
    }

    /** Reduced demo runs (20 requests, shorter prompts) in every mode and topology the engine supports. */
    @ParameterizedTest
    @ValueSource(strings = {"", "--mode pull", "--mode mixed", "--layout mla", "--layout per-layer", "--producer-tp 2 --consumer-tp 1", "--consumer-pp 2",
            "--consumer-pp 2 --mode pull", "--layout mla --consumer-tp 2", "--layout mla --consumer-tp 4", "--layout mla --producer-tp 2 --consumer-tp 4 --mode pull"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void reducedDemoMovesAndVerifiesEveryByte(String extra) throws Exception
    {
        List<String> args = new ArrayList<>(List.of("demo", "--json", "--requests", "20", "--max-tokens", "2048", "--idle-seconds", "0.5"));
        if (!extra.isEmpty()) {
            args.addAll(List.of(extra.split(" ")));
        }
        assertCleanAudit(CliRun.of(args.toArray(String[]::new)), 20);
    }

    /** The same over UCX with every producer stage and the decoder in a JVM of its own. */
    @ParameterizedTest
    @ValueSource(strings = {"", "--mode pull --consumer-pp 2", "--mode mixed --layout mla --producer-tp 2", "--layout mla --producer-tp 1 --consumer-tp 4"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void reducedDemoInSeparateProcessesOverUcx(String extra) throws Exception
    {
        Ucx.assumeAvailable();
        List<String> args = new ArrayList<>(List.of("demo", "--json", "--backend", "ucx", "--processes", "--requests", "20", "--max-tokens", "2048",
                "--idle-seconds", "0.5"));
        if (!extra.isEmpty()) {
            args.addAll(List.of(extra.split(" ")));
        }
        JsonNode audit = assertCleanAudit(CliRun.of(args.toArray(String[]::new)), 20);
        assertEquals(audit.get("metadata").get("producer").get("ppSize").asInt() + 1, audit.get("processes").asInt());
    }

    /**
     * Engines that lay out their caches differently: K/V planes against block-wise planes,
     * cross-layer rows against per-layer allocations, scheduler and kernel blocks 2 and 4 times
     * larger on either side, over the embedded transport; the audit checks every token and head.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "16|--layout per-layer --kv-planes split:blockwise",
            "16|--layout per-layer --kv-planes blockwise:split --mode pull --producer-tp 2 --consumer-tp 1",
            "16|--layout per-layer --placement cross-layer:per-layer --mode pull",
            "16|--layout per-layer --placement per-layer:cross-layer --kv-planes split",
            "32|--layout per-layer --block-tokens 16:32",
            "16|--layout per-layer --block-tokens 32:16 --mode pull",
            "64|--layout per-layer --block-tokens 16:64 --mode mixed --producer-tp 2 --consumer-tp 1",
            "16|--layout per-layer --block-tokens 64:16 --mode pull --producer-tp 4 --consumer-tp 2",
            "16|--layout per-layer --block-tokens 32:16 --kernel-block-tokens 16:16",
            "32|--layout per-layer --block-tokens 16:64 --kernel-block-tokens 16:32 --mode pull",
            "16|--layout mla --block-tokens 64:16"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void reducedDemoBetweenCachesOfOtherShapes(int decoderKernelTokens, String extra) throws Exception
    {
        List<String> args = new ArrayList<>(List.of("demo", "--json", "--requests", "20", "--max-tokens", "2048", "--idle-seconds", "0.5"));
        args.addAll(List.of(extra.split(" ")));
        assertCleanAudit(CliRun.of(args.toArray(String[]::new)), 20, decoderKernelTokens);
    }

    /** The same shapes over UCX: planes, rows and block sizes 2 and 4 times larger on either side. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "32|--block-tokens 16:32 --kv-planes split:blockwise",
            "16|--block-tokens 32:16 --placement cross-layer:per-layer --mode pull",
            "64|--block-tokens 16:64 --mode mixed",
            "16|--block-tokens 64:16 --kv-planes blockwise:split --mode pull"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void reducedDemoBetweenCachesOfOtherShapesOverUcx(int decoderKernelTokens, String extra) throws Exception
    {
        Ucx.assumeAvailable();
        List<String> args = new ArrayList<>(List.of("demo", "--json", "--backend", "ucx", "--layout", "per-layer", "--requests", "20", "--max-tokens", "2048",
                "--idle-seconds", "0.5"));
        args.addAll(List.of(extra.split(" ")));
        assertCleanAudit(CliRun.of(args.toArray(String[]::new)), 20, decoderKernelTokens);
    }

    private static JsonNode assertCleanAudit(CliRun run, int requests) throws Exception
    {
        return assertCleanAudit(run, requests, 16);
    }

    private static JsonNode assertCleanAudit(CliRun run, int requests, int decoderKernelTokens) throws Exception
    {
        assertEquals(0, run.exitCode(), run.out() + run.err());
        JsonNode audit = new ObjectMapper().readTree(run.out());
        assertEquals(requests, audit.get("requestsCompleted").asInt(), run.out());
        assertEquals(0, audit.get("parityErrors").asLong());
        assertEquals(0, audit.get("bytesChangedOutsideRequests").asLong());
        assertEquals(0, audit.get("failedTransfers").asLong());
        assertEquals(0, audit.get("failedReceives").asLong());
        assertEquals(0, audit.get("failedNotifications").asLong());
        assertEquals(0, audit.get("expiredLeases").asLong());
        assertEquals(audit.get("decoderPromptTokensNeeded").asLong(), audit.get("decoderPromptTokensReceived").asLong());
        assertEquals(0, audit.get("decoderPromptTokensComputedLocally").asLong());
        assertTrue(audit.get("decoderPromptTokensNeeded").asLong() >= requests, run.out());
        assertTrue(audit.get("transfers").asLong() >= requests && audit.get("bytes").asLong() > 0, run.out());
        assertTrue(audit.get("idleOk").asBoolean(), run.out());
        long operations = audit.get("operations").asLong();
        assertTrue(operations > 0 && operations <= audit.get("descriptors").asLong(), run.out());
        for (String side : List.of("producer", "decoder")) {
            JsonNode idle = audit.get("idle").get(side);
            for (String held : List.of("requests", "inFlightTransfers", "leasesHeld", "stashedRegistrations", "retainedHandles", "transportHandles")) {
                assertEquals(0, idle.get(held).asInt(), side + " " + held);
            }
            assertEquals(idle.get("registrationsExpected").asInt(), idle.get("registrations").asInt(), side + " registrations");
            assertTrue(idle.get("healthy").asBoolean(), side + " health: " + audit.get("problems"));
        }
        int decoderLayers = 0;
        for (JsonNode stage : audit.get("metadata").get("decoder").get("stages")) {
            decoderLayers += stage.get("layers").asInt();
            assertEquals(decoderKernelTokens, stage.get("blockTokens").asInt());
        }
        assertEquals(30, decoderLayers);
        assertTrue(audit.get("ok").asBoolean(), run.out());
        return audit;
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void defaultDemoIsPp2HybridPoolsIntoAPp1Decoder() throws Exception
    {
        CliRun run = CliRun.of("demo", "--json", "--requests", "4", "--max-tokens", "512", "--idle-seconds", "0");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        JsonNode audit = new ObjectMapper().readTree(run.out());
        assertEquals("push", audit.get("mode").asText());
        assertEquals("hma", audit.get("layout").asText());
        assertEquals("local", audit.get("backend").asText());
        JsonNode producer = audit.get("metadata").get("producer").get("stages");
        JsonNode decoder = audit.get("metadata").get("decoder").get("stages");
        assertEquals(List.of(15, 15), List.of(producer.get(0).get("layers").asInt(), producer.get(1).get("layers").asInt()));
        assertEquals(1, decoder.size());
        assertEquals(30, decoder.get(0).get("layers").asInt());
        // the stages pool 15 layers into 10 pools each, the decoder 30 into 20: the pools differ
        assertEquals(List.of(10, 10, 20), List.of(producer.get(0).get("regions").asInt(), producer.get(1).get("regions").asInt(),
                decoder.get(0).get("regions").asInt()));
        // each producer stage writes its own layers of every request: two writes per request
        assertEquals(8, audit.get("transfers").asLong());
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void progressGoesToStderrSoThatTheTextAuditAloneIsOnStdout()
    {
        CliRun run = CliRun.of("demo", "--requests", "4", "--max-tokens", "512", "--idle-seconds", "0");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().startsWith("kvbridge demo: demo/hybrid-30, hma layout, push over 'local', 4 requests"), run.out());
        assertTrue(run.out().strip().endsWith("result                    OK"), run.out());
        assertTrue(!run.out().contains("progress"), run.out());
        assertTrue(run.err().lines().anyMatch(line -> line.matches("progress: 4/4 requests \\(\\d+\\.\\d/s\\)")), run.err());
    }

    @Test
    void impossibleOptionsAreRefusedBeforeAnythingStarts()
    {
        CliRun run = CliRun.of("demo", "--consumer-pp", "31");
        assertEquals(2, run.exitCode());
        assertTrue(run.err().contains("--consumer-pp=31 is outside [1, 30]"), run.err());
        assertTrue(run.out().isEmpty(), run.out());
        CliRun heads = CliRun.of("demo", "--producer-tp", "3");
        assertEquals(2, heads.exitCode());
        assertTrue(heads.err().contains("--producer-tp=3"), heads.err());
        CliRun uneven = CliRun.of("demo", "--layout", "mla", "--producer-tp", "3", "--consumer-tp", "4");
        assertEquals(2, uneven.exitCode());
        assertTrue(uneven.err().contains("--producer-tp=3 and --consumer-tp=4 must be multiples of one another (for example 3 and 6)"), uneven.err());
        CliRun processes = CliRun.of("demo", "--processes");
        assertEquals(2, processes.exitCode());
        assertTrue(processes.err().contains("--processes needs a transport that reaches other processes, and 'local' cannot"), processes.err());
        CliRun metrics = CliRun.of("demo", "--processes", "--backend", "ucx", "--metrics-port", "0");
        assertEquals(2, metrics.exitCode());
        assertTrue(metrics.err().contains("--metrics-port cannot be combined with --processes"), metrics.err());
        CliRun planes = CliRun.of("demo", "--kv-planes", "split");
        assertEquals(2, planes.exitCode());
        assertTrue(planes.err().contains("--kv-planes and --placement are options of the per-layer layout"), planes.err());
        CliRun joint = CliRun.of("demo", "--layout", "per-layer", "--kv-planes", "joint:split");
        assertEquals(2, joint.exitCode());
        assertTrue(joint.err().contains("--kv-planes=joint:split pairs joint K/V with planes"), joint.err());
        CliRun windows = CliRun.of("demo", "--layout", "hma", "--block-tokens", "16:32");
        assertEquals(2, windows.exitCode());
        assertTrue(windows.err().contains("use equal --block-tokens, or --layout per-layer"), windows.err());
        CliRun kernel = CliRun.of("demo", "--layout", "per-layer", "--block-tokens", "16", "--kernel-block-tokens", "32");
        assertEquals(2, kernel.exitCode());
        assertTrue(kernel.err().contains("block of 32 tokens is larger than the scheduler's block of 16 tokens"), kernel.err());
        CliRun notPower = CliRun.of("demo", "--layout", "per-layer", "--block-tokens", "24:16");
        assertEquals(2, notPower.exitCode());
        assertTrue(notPower.err().contains("--block-tokens: producer value 24 is not a power of two"), notPower.err());
    }

    @Test
    void unknownBackendNamesTheAvailableOnes()
    {
        CliRun run = CliRun.of("demo", "--backend", "carrier-pigeon", "--requests", "1");
        assertEquals(2, run.exitCode());
        assertTrue(run.err().contains("--backend=carrier-pigeon is not a discovered transport; use one of ") && run.err().contains("local"), run.err());
    }
}
