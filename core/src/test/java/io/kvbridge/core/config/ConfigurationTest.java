package io.kvbridge.core.config;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.api.FailurePolicy;
import io.kvbridge.api.Integrity;
import io.kvbridge.api.TransferMode;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class ConfigurationTest
{
    @TempDir
    Path directory;

    @Test
    void theGuidesFullDocumentReadsWithoutAProblemAndRoundTrips()
            throws IOException
    {
        Matcher block = Pattern.compile("(?s)# Configuration.*?```json\n(.*?)```").matcher(Files.readString(Path.of("..", "docs", "configuration.md")));
        assertTrue(block.find(), "docs/configuration.md has a configuration example");
        List<String> problems = new ArrayList<>();
        BridgeConfig config = ConfigDocument.read("docs/configuration.md", block.group(1), problems);
        assertEquals(List.of(), problems);
        assertEquals(new BridgeConfig(BridgeConfig.Role.PRODUCER, "prefill-0", "ucx", Map.of("ucx", Map.of("max-in-flight", "64"), "local",
                Map.of("copy-threads", "2")), "prefill-0-host-a", "0.0.0.0", 5600, "10.0.0.5", Path.of("/etc/kvbridge/secret"), FailurePolicy.FAIL,
                Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofSeconds(60), EnumSet.allOf(TransferMode.class), "hma", Map.of(), null, null, TlsFiles.EMPTY,
                null, Integrity.OFF),
                config);
        assertEquals(config, ConfigDocument.read("written", ConfigDocument.write(config), problems));
        assertEquals(List.of(), problems);
        // what is not given stays not given
        assertEquals(BridgeConfig.EMPTY, ConfigDocument.read("written", ConfigDocument.write(BridgeConfig.EMPTY), problems));
        assertEquals(List.of(), problems);
    }

    @Test
    void vllmsWholeSecondsAndRecomputeAreUnderstood()
    {
        List<String> problems = new ArrayList<>();
        BridgeConfig config = ConfigDocument.read("doc", """
                {"kv_role": "kv_both", "kv_load_failure_policy": "recompute",
                 "kv_connector_extra_config": {"kv_lease_duration": 45, "transfer_timeout": "PT2M", "modes": ["pull"],
                                               "layout": "per-layer", "layout_options": {"kv-planes": "split", "flag": true}}}""", problems);
        assertEquals(List.of(), problems);
        assertEquals(BridgeConfig.Role.BOTH, config.role());
        assertEquals(FailurePolicy.RECOMPUTE, config.failurePolicy());
        assertEquals(Duration.ofSeconds(45), config.leaseDuration());
        assertEquals(Duration.ofMinutes(2), config.transferTimeout());
        assertEquals(Set.of(TransferMode.PULL), config.modes());
        assertEquals(Map.of("kv-planes", "split", "flag", "true"), config.layoutOptions());
    }

    @Test
    void vllmsOwnKeysAreIgnoredAndTheDocumentMayComeFromTheEnvironment()
    {
        String vllm = """
                {"kv_connector": "kvbridge", "kv_role": "kv_producer", "engine_id": "prefill-0", "kv_buffer_device": "cuda", "kv_rank": 0,
                 "kv_connector_extra_config": {"backends": ["UCX"], "num_threads": 8, "layout": "hma"}}""";
        Configuration.Resolved resolved = Configuration.resolve(null, null, Map.of(ConfigEnvironment.KV_TRANSFER_CONFIG, vllm));
        assertEquals(List.of(), resolved.problems());
        assertEquals("prefill-0", resolved.config().engineId());
        assertEquals("hma", resolved.config().layout());
        Configuration.Resolved both = Configuration.resolve(null, null, Map.of(ConfigEnvironment.KV_TRANSFER_CONFIG, vllm,
                ConfigEnvironment.CONFIG_FILE, "/etc/kvbridge.json"));
        assertTrue(both.problems().contains("KVBRIDGE_KV_TRANSFER_CONFIG and KVBRIDGE_CONFIG_FILE are both set; give the document one way"),
                both.problems()::toString);
    }

    @Test
    void everyProblemOfTheDocumentIsReportedAtOnce()
    {
        List<String> problems = new ArrayList<>();
        ConfigDocument.read("doc", """
                {"kv_connector": "NixlConnector", "kv_role": "producer", "engine_id": "has space", "kv_buffer_device": "cuda",
                 "kv_load_failure_policy": "retry", "kv_rol": "kv_producer",
                 "kv_connector_extra_config": {"side_chanel_port": 1, "side_channel_port": 70000, "transport": 5,
                   "kv_lease_duration": "5 parsecs", "transfer_timeout": 0, "push_registration_timeout": "2d", "modes": ["push", "sideways"],
                   "transports": {"ucx": {"max-in-flight": [1]}, "local": "fast"}, "layout_options": {"x": null}, "num_threads": 4,
                   "secret_file": false}}""", problems);
        List<String> expected = List.of(
                "kv_rol is not a known key (did you mean kv_role?)",
                "kv_connector=NixlConnector is not kvbridge: this document configures another connector (to configure kvbridge with the rest of it,"
                        + " write \"kv_connector\": \"kvbridge\")",
                "kv_role=producer is not a role (expected: kv_producer, kv_consumer or kv_both)",
                "engine_id=\"has space\" is not 1 to 255 printable ASCII characters without spaces",
                "kv_load_failure_policy=retry is not a failure policy (expected: fail or recompute)",
                "kv_connector_extra_config.side_chanel_port is not a known key (did you mean side_channel_port?)",
                "kv_connector_extra_config.transports.ucx.max-in-flight must be a string, an integer or a boolean, not an array",
                "kv_connector_extra_config.transports.local must be an object, not the string \"fast\"",
                "kv_connector_extra_config.modes holds sideways (expected: push or pull)",
                "kv_connector_extra_config.transport must be a string, not the integer 5",
                "kv_connector_extra_config.side_channel_port=70000 is outside [0, 65535]",
                "kv_connector_extra_config.secret_file must be a string, not false",
                "kv_connector_extra_config.kv_lease_duration=5 parsecs is not a duration; write a number with ns, us, ms, s, m, h or d (500ms, 5s, 2m)"
                        + " or ISO-8601 (PT5S)",
                "kv_connector_extra_config.transfer_timeout=0 seconds is outside [1, 86400] (or write a duration such as \"500ms\")",
                "kv_connector_extra_config.push_registration_timeout=2d is outside [1ms, 1d]",
                "kv_connector_extra_config.layout_options.x must be a string, an integer or a boolean, not null");
        assertEquals(expected.stream().sorted().toList(), problems.stream().sorted().toList());
    }

    @Test
    void hostileDocumentsAreRefusedBeforeMuchIsBuilt()
            throws IOException
    {
        assertOneProblem("{\"engine_id\": \"a\", \"engine_id\": \"b\"}", "duplicate key \"engine_id\" (each key may appear once per object) at line 1");
        assertOneProblem("[]", "doc must hold a JSON object, not an array");
        assertOneProblem("{\"kv_connector_extra_config\": {\"layout_options\": " + "{\"a\": ".repeat(20) + "1" + "}".repeat(22),
                "nesting deeper than 8 levels");
        assertOneProblem(" ".repeat(ConfigDocument.MAX_CHARS + 1), "doc has 1,048,577 characters, more than the 1,048,576 accepted");
        assertOneProblem("{\"kv_connector_extra_config\": [1]}", "kv_connector_extra_config must be an object, not an array");

        Path notUtf8 = Files.write(directory.resolve("latin1.json"), new byte[] {'{', '"', (byte) 0xe9, '"', ':', '1', '}'});
        assertEquals(List.of("configuration file " + notUtf8 + " is not UTF-8 text"), Configuration.resolve(null, notUtf8, Map.of()).problems());
        Path huge = Files.write(directory.resolve("huge.json"), new byte[4 * ConfigDocument.MAX_CHARS + 1]);
        assertEquals(List.of("configuration file " + huge + " is longer than 4 MiB; a configuration is a few hundred bytes"),
                Configuration.resolve(null, huge, Map.of()).problems());
        assertEquals(List.of("configuration file " + directory + " is not a regular file"), Configuration.resolve(null, directory, Map.of()).problems());
        assertEquals(List.of("KVBRIDGE_CONFIG_FILE=" + directory.resolve("none.json") + " does not exist"),
                Configuration.resolve(null, null, Map.of("KVBRIDGE_CONFIG_FILE", directory.resolve("none.json").toString())).problems());
    }

    @Test
    void theEnvironmentOverridesTheDocumentAndIsCheckedLikeIt()
            throws IOException
    {
        Path file = Files.writeString(directory.resolve("kvbridge.json"), """
                {"engine_id": "from-file", "kv_connector_extra_config": {"transport": "ucx", "side_channel_host": "0.0.0.0",
                 "side_channel_port": 5600, "modes": ["pull"]}}""");
        Configuration.Resolved resolved = Configuration.resolve(null, null, Map.of("KVBRIDGE_CONFIG_FILE", file.toString(),
                "KVBRIDGE_TRANSPORT", "local", "KVBRIDGE_SIDE_CHANNEL_PORT", "5700", "KVBRIDGE_MODES", "push, pull", "KVBRIDGE_LEASE", "",
                "KVBRIDGE_JAVA_OPTS", "-Xmx1g", "PATH", "/bin"));
        assertEquals(List.of(), resolved.problems());
        assertEquals("from-file", resolved.config().engineId());
        assertEquals("local", resolved.config().transport(), "the environment wins over the file");
        assertEquals("0.0.0.0", resolved.config().sideChannelHost());
        assertEquals(5700, resolved.config().sideChannelPort());
        assertEquals(EnumSet.allOf(TransferMode.class), resolved.config().modes());
        assertNull(resolved.config().leaseDuration(), "an empty variable is unset");
        // a document the embedder passes replaces the file the environment names
        assertEquals("from-text", Configuration.resolve("{\"engine_id\": \"from-text\"}", null, Map.of("KVBRIDGE_CONFIG_FILE", file.toString()))
                .config().engineId());

        List<String> problems = Configuration.resolve(null, null, Map.of("KVBRIDGE_SIDE_CHANEL_PORT", "1", "KVBRIDGE_SIDE_CHANNEL_PORT", "http",
                "KVBRIDGE_ROLE", "decoder", "KVBRIDGE_LEASE", "3ms", "KVBRIDGE_MODES", ",", "KVBRIDGE_FAILURE_POLICY", "ignore")).problems();
        assertEquals(List.of(
                "unknown environment variable KVBRIDGE_SIDE_CHANEL_PORT (did you mean KVBRIDGE_SIDE_CHANNEL_PORT?)",
                "KVBRIDGE_ROLE=decoder is not a role (expected: kv_producer, kv_consumer or kv_both)",
                "KVBRIDGE_SIDE_CHANNEL_PORT=http is not a port number",
                "KVBRIDGE_FAILURE_POLICY=ignore is not a failure policy (expected: fail or recompute)",
                "KVBRIDGE_MODES is empty (expected: push, pull or both)",
                "kv_lease_duration=3ms is shorter than 6ms"), problems);
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> Configuration.resolve(null, null, Map.of("KVBRIDGE_ROLE", "x")).orThrow());
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertEquals("KVB/ConfigInvalid: configuration is invalid (1 problem): KVBRIDGE_ROLE=x is not a role (expected: kv_producer, kv_consumer or"
                + " kv_both)", e.getMessage());
    }

    @Test
    void discoveryIsConfiguredByDocumentOrEnvironmentAndMalformedLocationsNameTheFix()
    {
        Configuration.Resolved resolved = Configuration.resolve("""
                {"kv_connector_extra_config": {"discovery": "etcd://10.0.0.1:2379, 10.0.0.2:2379", "discovery_lease_ttl": "15s"}}""", null,
                Map.of());
        assertEquals(List.of(), resolved.problems());
        assertEquals("etcd://10.0.0.1:2379,10.0.0.2:2379", resolved.config().discovery());
        assertEquals(Duration.ofSeconds(15), resolved.config().discoveryLeaseTtl());
        assertEquals(resolved.config(), ConfigDocument.read("written", ConfigDocument.write(resolved.config()), new ArrayList<>()));
        assertEquals("etcd://127.0.0.1:2379", Configuration.resolve("{\"kv_connector_extra_config\": {\"discovery\": \"etcd://a:1\"}}", null,
                Map.of("KVBRIDGE_DISCOVERY", "etcd://127.0.0.1:2379")).config().discovery(), "the environment wins over the document");

        assertEquals(List.of("KVBRIDGE_DISCOVERY: discovery=etcd://127.0.0.1 is malformed: endpoint '127.0.0.1' is not host:port (expected"
                + " scheme://host:port[,host:port...], for example etcd://127.0.0.1:2379)"),
                Configuration.resolve(null, null, Map.of("KVBRIDGE_DISCOVERY", "etcd://127.0.0.1")).problems());
        assertEquals(List.of("kv_connector_extra_config.discovery: discovery=10.0.0.1:2379 is malformed: no scheme (expected"
                + " scheme://host:port[,host:port...], for example etcd://127.0.0.1:2379)",
                "kv_connector_extra_config.discovery_lease_ttl=500ms is below 1s (write e.g. \"10s\")"),
                Configuration.resolve("""
                        {"kv_connector_extra_config": {"discovery": "10.0.0.1:2379", "discovery_lease_ttl": "500ms"}}""", null, Map.of()).problems());
    }

    @Test
    void theSecretFileIsCheckedBeforeItIsUsed()
            throws IOException
    {
        Path secret = directory.resolve("secret");
        Map<String, String> environment = Map.of("KVBRIDGE_SECRET_FILE", secret.toString());
        assertEquals(List.of("KVBRIDGE_SECRET_FILE=" + secret + " does not exist (write at least 16 random bytes into it, for example: openssl rand -hex 32 > "
                + secret + "; chmod 600 " + secret + ")"), Configuration.resolve(null, null, environment).problems());
        Files.writeString(secret, "0123456789abcdef0123456789abcdef\n");
        boolean posix = Files.getFileStore(secret).supportsFileAttributeView("posix");
        assumeTrue(posix, "the temporary directory's file system has no POSIX permissions to check");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-r--r--"));
        assertEquals(List.of("KVBRIDGE_SECRET_FILE=" + secret + " may be read or written by every user of the host; run chmod 600 " + secret
                + " (in Kubernetes: defaultMode: 0400)"), Configuration.resolve(null, null, environment).problems());
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-r-----"));
        Configuration.Resolved resolved = Configuration.resolve(null, null, environment);
        assertEquals(List.of(), resolved.problems());
        assertArrayEquals("0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII), resolved.secret(), "the line break is dropped");

        Files.writeString(secret, "short\r\n");
        assertEquals(List.of("kv_connector_extra_config.secret_file=" + secret + " holds 5 bytes, fewer than the 16 a secret needs (for example: openssl rand"
                + " -hex 32 > " + secret + ")"), Configuration.resolve("{\"kv_connector_extra_config\": {\"secret_file\": \"" + secret + "\"}}", null,
                Map.of()).problems());
        Files.write(secret, new byte[SecretFile.MAX_BYTES + 1]);
        assertEquals(List.of("KVBRIDGE_SECRET_FILE=" + secret + " is longer than 4096 bytes; a secret is a few dozen random bytes"),
                Configuration.resolve(null, null, environment).problems());
        assertEquals(List.of("KVBRIDGE_SECRET_FILE=" + directory + " is not a regular file"),
                Configuration.resolve(null, null, Map.of("KVBRIDGE_SECRET_FILE", directory.toString())).problems());
    }

    private static void assertOneProblem(String text, String problem)
    {
        List<String> problems = new ArrayList<>();
        assertEquals(BridgeConfig.EMPTY, ConfigDocument.read("doc", text, problems));
        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.getFirst().contains(problem), problems.getFirst());
    }
}
