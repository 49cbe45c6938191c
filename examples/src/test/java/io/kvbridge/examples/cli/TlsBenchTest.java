package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.core.plugin.PluginRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The two-process bench's control connection over TLS 1.3: server-only and mutual, through a relay
 * that records the wire, so that what a capture would show is checked against the plain connection's;
 * and every mismatch (a CA that did not sign the target, a client certificate the target does not
 * trust, a plain end against a TLS one either way round) failing in one line within its deadline.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
final class TlsBenchTest
{
    /** Strings every control connection carries: message keys and both agents' names. */
    private static final List<String> CONTROL_STRINGS = List.of("grant_key", "total_bytes", "metadata", "bench-target-", "bench-initiator-");
    private static final String NO_COMPILER = "no-such-gcc";

    @TempDir
    Path directory;

    @ParameterizedTest(name = "control connection: {0}")
    @ValueSource(strings = {"plain", "tls", "mutual"})
    void initiatorMeasuresOverTheControlConnectionAndItsBytesAreReadableOnlyWithoutTls(String mode) throws Exception
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        BenchCertificates certificates = BenchCertificates.get();
        Path secret = ownerOnly("bench.secret", "a shared secret of 32 bytes......");
        List<String> target = new ArrayList<>(List.of("bench", "--role", "target", "--listen", "127.0.0.1:0", "--total-bytes", "1MiB", "--timeout", "60s",
                "--cc", NO_COMPILER, "--secret-file", secret.toString()));
        List<String> initiator = new ArrayList<>(List.of("bench", "--role", "initiator", "--total-bytes", "1MiB", "--block-sizes", "256KiB", "--json",
                "--timeout", "20s", "--cc", NO_COMPILER, "--secret-file", secret.toString()));
        if (!mode.equals("plain")) {
            target.addAll(List.of("--tls-cert", certificates.target.chain().toString(), "--tls-key", certificates.target.key().toString()));
            initiator.addAll(List.of("--tls-ca", certificates.ca.toString()));
        }
        if (mode.equals("mutual")) {
            target.addAll(List.of("--tls-client-auth", "require", "--tls-ca", certificates.ca.toString()));
            initiator.addAll(List.of("--tls-cert", certificates.initiator.chain().toString(), "--tls-key", certificates.initiator.key().toString()));
        }
        try (BenchChild targetChild = BenchChild.start(directory.resolve("target"), Map.of(), target.toArray(String[]::new));
                RecordingRelay relay = RecordingRelay.to(targetChild.port())) {
            initiator.addAll(List.of("--peer", "127.0.0.1:" + relay.port()));
            try (BenchChild initiatorChild = BenchChild.start(directory.resolve("initiator"), Map.of(), initiator.toArray(String[]::new))) {
                assertEquals(0, initiatorChild.waitFor(), initiatorChild.describe());
                assertEquals(0, targetChild.waitFor(), targetChild.describe());
                JsonNode result = new ObjectMapper().readTree(initiatorChild.out());
                for (JsonNode row : result.get("rows")) {
                    assertTrue(row.get("gbPerSecond").asDouble() > 0 && row.get("transfers").asInt() == 4, row.toString());
                }
                assertEquals(2, result.get("rows").size(), result.toString());
                JsonNode control = result.get("control");
                assertTrue(control.get("authenticated").asBoolean(), control.toString());
                String wire = new String(relay.captured(), StandardCharsets.ISO_8859_1);
                assertTrue(wire.length() > 1_000, "the relay saw " + wire.length() + " bytes");
                if (mode.equals("plain")) {
                    assertFalse(control.get("tls").asBoolean(), control.toString());
                    // the check below means something: without TLS a capture shows all of them
                    for (String text : CONTROL_STRINGS) {
                        assertTrue(wire.contains(text), "plain control bytes lack " + text);
                    }
                    return;
                }
                for (String text : CONTROL_STRINGS) {
                    assertFalse(wire.contains(text), "the TLS control connection shows " + text + " on the wire");
                }
                assertTrue(control.get("tls").asBoolean(), control.toString());
                assertEquals("TLSv1.3", control.get("protocol").asText(), control.toString());
                assertTrue(control.get("handshakeMillis").asDouble() > 0, control.toString());
                assertTrue(control.get("targetCertificate").asText().contains("CN=kvbridge bench target"), control.toString());
                assertEquals(mode.equals("mutual"), control.get("clientCertificate").asBoolean(), control.toString());
                assertTrue(targetChild.err().contains("control connection over TLS 1.3" + (mode.equals("mutual") ? " (client certificates required)" : "")
                        + ", control messages authenticated"), targetChild.err());
                assertTrue(targetChild.err().contains("control connection: TLSv1.3 ") && targetChild.err().contains(
                        mode.equals("mutual") ? "peer certificate CN=kvbridge bench initiator" : "peer certificate none"), targetChild.err());
            }
        }
    }

    @Test
    void aMutualTlsTargetRefusesEachWrongInitiatorInOneLineWithinItsDeadlineAndServesTheNext() throws Exception
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        BenchCertificates certificates = BenchCertificates.get();
        try (BenchChild target = BenchChild.start(directory.resolve("target"), Map.of(), "bench", "--role", "target", "--listen", "127.0.0.1:0",
                "--total-bytes", "1MiB", "--timeout", "60s", "--tls-cert", certificates.target.chain().toString(), "--tls-key",
                certificates.target.key().toString(), "--tls-client-auth", "require", "--tls-ca", certificates.ca.toString())) {
            String peer = "127.0.0.1:" + target.port();
            String wrongCa = assertFailsInOneLine("KVB/HandshakeFailed: the TLS handshake with the bench target at " + peer + " failed: ",
                    "--peer", peer, "--tls-ca", certificates.otherCa.toString(), "--tls-cert", certificates.initiator.chain().toString(), "--tls-key",
                    certificates.initiator.key().toString());
            assertTrue(wrongCa.contains("is its certificate signed by --tls-ca"), wrongCa);
            target.await(Pattern.compile("initiator session 1 ended without finishing: KVB/HandshakeFailed: the TLS handshake with initiator"));
            // TLS 1.3: the initiator finishes its handshake before the target checks its certificate, so it learns on its first exchange
            String stranger = assertFailsInOneLine("KVB/HandshakeFailed: ", "--peer", peer, "--tls-ca", certificates.ca.toString(), "--tls-cert",
                    certificates.stranger.chain().toString(), "--tls-key", certificates.stranger.key().toString());
            assertTrue(stranger.contains("--tls-client-auth require closes the connection after the handshake"), stranger);
            target.await(Pattern.compile("initiator session 2 ended without finishing: KVB/HandshakeFailed: the TLS handshake with initiator .* failed: "));
            String none = assertFailsInOneLine("KVB/HandshakeFailed: ", "--peer", peer, "--tls-ca", certificates.ca.toString());
            assertTrue(none.contains("give --tls-cert and --tls-key"), none);
            // the target's alert ("answered with TLS"), or its close or reset when that comes first
            String plain = assertFailsInOneLine("KVB/HandshakeFailed: ", "--peer", peer);
            assertTrue(plain.contains("give it --tls-ca") || plain.contains("give this initiator --tls-ca"), plain);
            target.await(Pattern.compile("initiator session 4 ended without finishing: KVB/HandshakeFailed: the TLS handshake with initiator .* failed: "));
            assertTrue(target.process.isAlive(), target.describe());
        }
    }

    @Test
    void aTlsInitiatorAgainstAPlainTargetFailsInOneLineAndTheTargetSaysWhy() throws Exception
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        BenchCertificates certificates = BenchCertificates.get();
        try (BenchChild target = BenchChild.start(directory.resolve("target"), Map.of(), "bench", "--role", "target", "--listen", "127.0.0.1:0",
                "--total-bytes", "1MiB", "--timeout", "60s")) {
            String peer = "127.0.0.1:" + target.port();
            String failed = assertFailsInOneLine("KVB/HandshakeFailed: the TLS handshake with the bench target at " + peer + " failed: ",
                    "--peer", peer, "--tls-ca", certificates.ca.toString());
            assertTrue(failed.contains("does it serve TLS") || failed.contains("start it with --tls-cert and --tls-key"), failed);
            target.await(Pattern.compile("initiator session 1 ended without finishing: KVB/HandshakeFailed: initiator 127\\.0\\.0\\.1:\\d+ speaks TLS, but this target was started"
                    + " without it: start it with --tls-cert FILE --tls-key FILE"));
            assertTrue(target.process.isAlive(), target.describe());
        }
    }

    @Test
    void tlsOptionsThatCannotWorkAreRefusedInOneLineBeforeAnythingStarts() throws IOException
    {
        BenchCertificates certificates = BenchCertificates.get();
        String cert = certificates.target.chain().toString();
        String key = certificates.target.key().toString();
        Path readableKey = directory.resolve("readable-key.pem");
        Files.copy(certificates.target.key(), readableKey);
        Files.setPosixFilePermissions(readableKey, PosixFilePermissions.fromString("rw-r--r--"));
        String[] target = {"bench", "--role", "target", "--listen", "127.0.0.1:0", "--total-bytes", "1MiB"};
        String[] initiator = {"bench", "--role", "initiator", "--peer", "127.0.0.1:5600", "--total-bytes", "1MiB", "--block-sizes", "256KiB"};
        assertRefused("--role target serves TLS with --tls-cert FILE and --tls-key FILE; give both (missing: --tls-cert, --tls-key)", target, "--tls-ca",
                certificates.ca.toString());
        assertRefused("give both (missing: --tls-key)", target, "--tls-cert", cert);
        assertRefused("TLS options refused: --tls-key=" + readableKey + " may be read or written by every user of the host; run chmod 600", target,
                "--tls-cert", cert, "--tls-key", readableKey.toString());
        Path absent = directory.resolve("absent.pem");
        assertRefused("TLS options refused: --tls-ca=" + absent + " does not exist", initiator, "--tls-ca", absent.toString());
        assertRefused("--tls-client-auth=require needs the CA that signs the clients' certificates: set --tls-ca", target, "--tls-cert", cert,
                "--tls-key", key, "--tls-client-auth", "require");
        assertRefused("--tls-client-auth is the target's", initiator, "--tls-client-auth", "require");
        assertRefused("--tls-no-verify-hostname is the initiator's", target, "--tls-cert", cert, "--tls-key", key, "--tls-no-verify-hostname");
        assertRefused("--tls-no-verify-hostname applies only over TLS: give --tls-ca FILE", initiator, "--tls-no-verify-hostname");
        assertRefused("--tls-client-auth=sometimes is not one of none, want, require", target, "--tls-client-auth", "sometimes");
        assertRefused("--tls-cert, --tls-key apply only with --role target or --role initiator", new String[] {"bench"}, "--tls-cert", cert,
                "--tls-key", key);
    }

    /** Runs an initiator in this JVM, which must fail with one line; {@return that line} */
    private static String assertFailsInOneLine(String expected, String... options)
    {
        List<String> args = new ArrayList<>(List.of("bench", "--role", "initiator", "--total-bytes", "1MiB", "--block-sizes", "256KiB", "--timeout", "5s",
                "--cc", NO_COMPILER));
        args.addAll(List.of(options));
        long start = System.nanoTime();
        CliRun run = CliRun.of(args.toArray(String[]::new));
        double seconds = (System.nanoTime() - start) / 1e9;
        assertEquals(KvBridgeCli.FAILED, run.exitCode(), run.err());
        List<String> lines = run.err().lines().toList();
        assertEquals(1, lines.size(), run.err());
        assertTrue(lines.getFirst().startsWith("kvbridge bench: " + expected), run.err());
        // within the initiator's --timeout, with room for a loaded machine's JIT
        assertTrue(seconds < 5 + 3, "the initiator took " + seconds + " s: " + run.err());
        return lines.getFirst();
    }

    private static void assertRefused(String expected, String[] command, String... options)
    {
        List<String> args = new ArrayList<>(List.of(command));
        args.addAll(List.of(options));
        CliRun run = CliRun.of(args.toArray(String[]::new));
        assertEquals(KvBridgeCli.USAGE, run.exitCode(), run.err());
        assertTrue(run.err().lines().findFirst().orElse("").contains(expected), expected + "\n" + run.err());
    }

    private Path ownerOnly(String name, String content) throws IOException
    {
        Path file = Files.writeString(directory.resolve(name), content, StandardCharsets.US_ASCII);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        return file;
    }

    private static boolean ucxAvailable()
    {
        return PluginRegistry.discover(TlsBenchTest.class.getClassLoader()).describe().stream()
                .anyMatch(plugin -> plugin.name().equals("ucx") && plugin.available());
    }
}
