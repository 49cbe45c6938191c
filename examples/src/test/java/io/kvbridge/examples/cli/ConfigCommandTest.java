package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class ConfigCommandTest
{
    @TempDir
    Path directory;

    @Test
    void aValidDocumentIsPrintedAsTheBridgeReadsIt()
            throws IOException
    {
        Path file = Files.writeString(directory.resolve("ok.json"), """
                {"kv_role": "kv_consumer", "engine_id": "decode-0", "kv_connector_extra_config": {"transport": "local", "kv_lease_duration": 30,
                 "layout": "hma"}}""");
        CliRun run = CliRun.of("config", "validate", "--no-env", file.toString());
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().startsWith(file + ": valid\n"), run.out());
        assertTrue(run.out().contains("\"kv_lease_duration\": \"30s\""), run.out());
    }

    @Test
    void transportBlocksAreCheckedAsTheTransportReadsThem()
            throws IOException
    {
        Path file = Files.writeString(directory.resolve("transports.json"), """
                {"kv_role": "kv_consumer", "engine_id": "decode-0", "kv_connector_extra_config": {"transport": "ucx",
                 "transports": {"tcp": {"port": 70000, "max-in-flight": 100000000000000, "connect-timeout-ms": -1}, "ucx": {"tls": "tcp"},
                 "local": {"copy-threads": 2}}}}""");
        CliRun run = CliRun.of("config", "validate", "--no-env", file.toString());
        assertEquals(1, run.exitCode(), run.out() + run.err());
        List<String> lines = run.out().lines().toList();
        assertEquals(file + ": 2 problems", lines.getFirst(), run.out());
        String tcp = lines.stream().filter(line -> line.startsWith("  kv_connector_extra_config.transports.tcp: ")).findFirst().orElse(run.out());
        for (String bad : new String[] {"port=70000 is outside [0, 65535]", "max-in-flight=100000000000000 is outside [1, 16777216]", "connect-timeout-ms=-1 is outside [1, 600000]"}) {
            assertTrue(tcp.contains(bad), () -> bad + " missing from " + tcp);
        }
        assertTrue(run.out().contains("  kv_connector_extra_config.transports.ucx: ucx configuration has 1 problem(s): tls=tcp lets UCX open its tcp "
                + "transport"), run.out());
        // the same blocks, corrected, are valid
        Path fixed = Files.writeString(directory.resolve("fixed.json"), """
                {"kv_role": "kv_consumer", "engine_id": "decode-0", "kv_connector_extra_config": {"transport": "tcp",
                 "transports": {"tcp": {"port": 7000, "max-in-flight": 1024, "connect-timeout-ms": 500}, "ucx": {"tls": "sm"}}}}""");
        CliRun valid = CliRun.of("config", "validate", "--no-env", fixed.toString());
        assertEquals(0, valid.exitCode(), valid.out() + valid.err());
    }

    @Test
    void everyProblemIsPrintedAndTheExitCodeIsOne()
            throws IOException
    {
        Path file = Files.writeString(directory.resolve("bad.json"), """
                {"kv_role": "kv_decoder", "kv_connector_extra_config": {"transport": "ucxx", "side_channel_port": -1, "layout": "hmm",
                 "transports": {"nixel": {}}, "secret_flie": "/s", "discovery": "zk://10.0.0.1:2181"}}""");
        CliRun run = CliRun.of("config", "validate", "--no-env", file.toString());
        assertEquals(1, run.exitCode(), run.out() + run.err());
        assertEquals(String.join("\n", file + ": 7 problems",
                "  kv_role=kv_decoder is not a role (expected: kv_producer, kv_consumer or kv_both)",
                "  kv_connector_extra_config.secret_flie is not a known key (did you mean secret_file?)",
                "  kv_connector_extra_config.side_channel_port=-1 is outside [0, 65535]",
                "  transport ucxx is not on the class path (did you mean ucx?)",
                "  kv_connector_extra_config.transports.nixel names no transport on the class path (did you mean nixl?)",
                "  layout hmm is not on the class path (did you mean hma?)",
                "  discovery zk://10.0.0.1:2181 names scheme zk, which no discovery plugin on the class path serves (schemes found: [etcd])")
                + "\n", run.out());
        CliRun missing = CliRun.of("config", "validate", "--no-env", directory.resolve("none.json").toString());
        assertEquals(1, missing.exitCode());
        assertTrue(missing.out().contains("configuration file " + directory.resolve("none.json") + " does not exist"), missing.out());
    }

    @Test
    void aVllmUsersKvTransferConfigReadsAsWrittenAndMisspelledKvbridgeKeysAreStillRefused()
    {
        // as a vLLM user writes it for the NIXL connector, with kvbridge named as the connector
        String vllm = """
                {"kv_connector": "kvbridge", "kv_role": "kv_both", "kv_buffer_device": "cuda", "kv_buffer_size": 1000000000,
                 "kv_connector_extra_config": {"backends": ["UCX"], "num_threads": 4, "transport": "local"}}""";
        CliRun run = CliRun.of("config", "validate", "--no-env", "--kv-transfer-config", vllm);
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().startsWith("--kv-transfer-config: valid\n"), run.out());
        CliRun misspelled = CliRun.of("config", "validate", "--no-env", "--kv-transfer-config",
                "{\"kv_connector\": \"kvbridge\", \"kv_connector_extra_config\": {\"backends\": [\"UCX\"], \"trasnport\": \"local\"}}");
        assertEquals(1, misspelled.exitCode(), misspelled.out() + misspelled.err());
        assertTrue(misspelled.out().contains("kv_connector_extra_config.trasnport is not a known key (did you mean transport?)"), misspelled.out());
        assertEquals(KvBridgeCli.USAGE, CliRun.of("config", "validate", "--no-env").exitCode(), "neither a file nor the document");
    }

    @Test
    void initPrintsATemplateThatValidatesAndExplainsItsKeysOnStderr(@TempDir Path directory) throws Exception
    {
        CliRun init = CliRun.of("config", "init");
        assertEquals(0, init.exitCode(), init.err());
        Path file = Files.writeString(directory.resolve("kvbridge.json"), init.out());
        CliRun validate = CliRun.of("config", "validate", "--no-env", file.toString());
        assertEquals(0, validate.exitCode(), validate.out() + validate.err());
        assertTrue(validate.out().startsWith(file + ": valid"), validate.out());
        for (String key : List.of("kv_role", "engine_id", "transport", "side_channel_host", "kv_lease_duration", "modes", "secret_file")) {
            assertTrue(init.err().lines().anyMatch(line -> line.startsWith("# ") && line.contains(key)), key + " explained in\n" + init.err());
        }
        assertTrue(init.out().strip().startsWith("{") && !init.out().contains("#"), "stdout holds the document alone:\n" + init.out());
    }
}
