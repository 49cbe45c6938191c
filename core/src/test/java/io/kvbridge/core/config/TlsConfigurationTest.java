package io.kvbridge.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.tls.SideChannelTls.ClientAuth;
import io.kvbridge.core.sidechannel.TestCertificates;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code tls} object of the configuration and its {@code KVBRIDGE_TLS_*} variables, read and loaded. */
final class TlsConfigurationTest
{
    @TempDir
    Path directory;

    private final TestCertificates certificates = TestCertificates.get();

    @Test
    void aDocumentsTlsObjectLoadsRoundTripsAndTheEnvironmentOverridesItValueByValue()
    {
        String document = """
                {"kv_connector_extra_config": {"tls": {"cert_file": "%s", "key_file": "%s", "ca_file": "%s", "client_auth": "require"}}}"""
                .formatted(certificates.server.chainPem(), certificates.server.keyPem(), certificates.caPem);
        Configuration.Resolved resolved = Configuration.resolve(document, null, Map.of("KVBRIDGE_TLS_VERIFY_HOSTNAME", "false"));
        assertEquals(List.of(), resolved.problems());
        assertNotNull(resolved.tls());
        assertEquals(ClientAuth.REQUIRE, resolved.tls().clientAuth());
        assertTrue(!resolved.tls().verifyHostname());
        assertTrue(resolved.tls().hasKey());
        List<String> problems = new ArrayList<>();
        assertEquals(resolved.config(), ConfigDocument.read("written", ConfigDocument.write(resolved.config()), problems));
        assertEquals(List.of(), problems);
        assertNull(Configuration.resolve("{}", null, Map.of()).tls(), "no tls object: plain TCP");
    }

    @Test
    void everyTlsProblemIsReportedAtOnceWithTheValueAndTheFix()
            throws IOException
    {
        Path readableKey = Files.writeString(directory.resolve("key.pem"), Files.readString(certificates.server.keyPem()));
        Files.setPosixFilePermissions(readableKey, PosixFilePermissions.fromString("rw-r--r--"));
        Path pkcs1 = Files.writeString(directory.resolve("rsa.pem"), "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
        Files.setPosixFilePermissions(pkcs1, PosixFilePermissions.fromString("rw-------"));
        Path notPem = Files.writeString(directory.resolve("ca.pem"), "not a certificate");
        String document = """
                {"kv_connector_extra_config": {"tls": {"cert_file": "%s", "key_file": "%s", "ca_file": "%s", "client_auth": "sometimes",
                  "verify_host": true}}}""".formatted(directory.resolve("missing.pem"), readableKey, notPem);
        List<String> problems = Configuration.resolve(document, null, Map.of()).problems();
        String all = String.join("\n", problems);
        assertTrue(all.contains("verify_host") && all.contains("verify_hostname"), all);
        assertTrue(all.contains("client_auth=sometimes is not none, want or require"), all);
        assertTrue(all.contains("tls.cert_file=" + directory.resolve("missing.pem") + " does not exist"), all);
        assertTrue(all.contains("tls.key_file=" + readableKey + " may be read or written by every user of the host; run chmod 600"), all);
        assertTrue(all.contains("tls.ca_file=" + notPem), all);
        assertEquals(5, problems.size(), all);

        List<String> keyProblems = Configuration.resolve(null, null, Map.of("KVBRIDGE_TLS_CERT_FILE", certificates.server.chainPem().toString(),
                "KVBRIDGE_TLS_KEY_FILE", pkcs1.toString(), "KVBRIDGE_TLS_KEYSTORE_FILE", certificates.server.keystore().toString())).problems();
        assertEquals(1, keyProblems.size(), keyProblems.toString());
        assertTrue(keyProblems.getFirst().contains("set either the PEM files or the keystore"), keyProblems.toString());

        List<String> pkcs1Problems = Configuration.resolve(null, null, Map.of("KVBRIDGE_TLS_CERT_FILE", certificates.server.chainPem().toString(),
                "KVBRIDGE_TLS_KEY_FILE", pkcs1.toString())).problems();
        assertTrue(pkcs1Problems.toString().contains("a PKCS#1 RSA key") && pkcs1Problems.toString().contains("openssl pkcs8 -topk8"),
                pkcs1Problems.toString());

        Path wrongPassword = Files.writeString(directory.resolve("password"), "not-the-password\n");
        Files.setPosixFilePermissions(wrongPassword, PosixFilePermissions.fromString("rw-------"));
        List<String> storeProblems = Configuration.resolve(null, null, Map.of("KVBRIDGE_TLS_KEYSTORE_FILE", certificates.server.keystore().toString(),
                "KVBRIDGE_TLS_KEYSTORE_PASSWORD_FILE", wrongPassword.toString(), "KVBRIDGE_TLS_CLIENT_AUTH", "want")).problems();
        String stores = String.join("\n", storeProblems);
        assertTrue(stores.contains("cannot be opened as a PKCS12 keystore with the password given"), stores);
        assertTrue(stores.contains("client_auth=want needs the CA"), stores);
        assertEquals(2, storeProblems.size(), stores);
    }
}
