package io.kvbridge.examples.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Test certificates for the bench's control connection, made once per test JVM with the JDK's
 * keytool as core's side channel tests make theirs (that helper lives in core's test sources, out of
 * reach here): a CA, a target certificate for 127.0.0.1 and an initiator's certificate signed by it,
 * and a second CA with an initiator certificate of its own, which the first CA does not trust. Each
 * identity is a PEM chain and a PKCS#8 PEM key that only its owner may read.
 */
final class BenchCertificates
{
    private static final String PASSWORD = "bench-test-password";
    private static BenchCertificates made;

    /** One identity's files. */
    record Identity(Path chain, Path key)
    {
    }

    /** The CA bundle that signed {@link #target} and {@link #initiator}. */
    final Path ca;
    /** Another CA, which signed {@link #stranger}. */
    final Path otherCa;
    /** The target's certificate, SAN ip:127.0.0.1. */
    final Identity target;
    /** An initiator's certificate from {@link #ca}. */
    final Identity initiator;
    /** An initiator's certificate from {@link #otherCa}. */
    final Identity stranger;

    private BenchCertificates(Path directory) throws IOException, GeneralSecurityException, InterruptedException
    {
        Path store = directory.resolve("bench.p12");
        keytool("-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=kvbridge bench test CA", "-ext", "bc:c",
                "-validity", "2", "-keystore", store.toString());
        keytool("-genkeypair", "-alias", "other-ca", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=another test CA", "-ext", "bc:c",
                "-validity", "2", "-keystore", store.toString());
        // -signer: the CA signs the new key's certificate at once, with no request to pass around
        keytool("-genkeypair", "-alias", "target", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=kvbridge bench target", "-signer", "ca",
                "-ext", "san=ip:127.0.0.1", "-validity", "2", "-keystore", store.toString());
        keytool("-genkeypair", "-alias", "initiator", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=kvbridge bench initiator", "-signer",
                "ca", "-validity", "2", "-keystore", store.toString());
        keytool("-genkeypair", "-alias", "stranger", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=stranger initiator", "-signer",
                "other-ca", "-validity", "2", "-keystore", store.toString());
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            keys.load(in, PASSWORD.toCharArray());
        }
        ca = Files.writeString(directory.resolve("ca.pem"), pem("CERTIFICATE", keys.getCertificate("ca").getEncoded()));
        otherCa = Files.writeString(directory.resolve("other-ca.pem"), pem("CERTIFICATE", keys.getCertificate("other-ca").getEncoded()));
        target = identity(directory, keys, "target");
        initiator = identity(directory, keys, "initiator");
        stranger = identity(directory, keys, "stranger");
    }

    /** {@return the certificates, made on first use in a fresh temporary folder} */
    static synchronized BenchCertificates get()
    {
        if (made == null) {
            // test stores need no key stretching: the default iteration counts cost seconds on a loaded machine
            for (String count : List.of("keystore.pkcs12.certPbeIterationCount", "keystore.pkcs12.keyPbeIterationCount",
                    "keystore.pkcs12.macIterationCount")) {
                System.setProperty(count, "1");
            }
            try {
                Path directory = Files.createTempDirectory("kvbridge-bench-tls-");
                directory.toFile().deleteOnExit();
                made = new BenchCertificates(directory);
            }
            catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            catch (GeneralSecurityException | InterruptedException e) {
                throw new IllegalStateException("cannot make the test certificates", e);
            }
        }
        return made;
    }

    private static Identity identity(Path directory, KeyStore keys, String alias) throws IOException, GeneralSecurityException
    {
        StringBuilder chain = new StringBuilder();
        for (Certificate certificate : keys.getCertificateChain(alias)) {
            chain.append(pem("CERTIFICATE", certificate.getEncoded()));
        }
        Path chainFile = Files.writeString(directory.resolve(alias + "-chain.pem"), chain);
        Path key = directory.resolve(alias + "-key.pem");
        Files.writeString(key, pem("PRIVATE KEY", keys.getKey(alias, PASSWORD.toCharArray()).getEncoded()), StandardCharsets.US_ASCII);
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
        return new Identity(chainFile, key);
    }

    private static String pem(String type, byte[] der)
    {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der) + "\n-----END " + type + "-----\n";
    }

    private static void keytool(String... arguments) throws IOException, InterruptedException
    {
        List<String> command = new ArrayList<>(List.of(arguments));
        command.addAll(List.of("-storetype", "PKCS12", "-storepass", PASSWORD));
        // in this JVM where the build exports keytool's package to the tests (a process per step costs seconds on a loaded machine)
        if (Object.class.getModule().isExported("sun.security.tools.keytool", BenchCertificates.class.getModule())) {
            ByteArrayOutputStream output = new ByteArrayOutputStream();
            int exit;
            try {
                Class<?> main = Class.forName("sun.security.tools.keytool.Main");
                exit = (int) main.getMethod("run", String[].class, PrintStream.class).invoke(main.getConstructor().newInstance(),
                        command.toArray(String[]::new), new PrintStream(output, true, StandardCharsets.UTF_8));
            }
            catch (ReflectiveOperationException e) {
                throw new IOException("keytool " + String.join(" ", arguments) + " failed: " + e.getCause(), e);
            }
            if (exit != 0) {
                throw new IOException("keytool " + String.join(" ", arguments) + " failed: " + output.toString(StandardCharsets.UTF_8));
            }
            return;
        }
        command.addFirst(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(30, TimeUnit.SECONDS) || process.exitValue() != 0) {
            process.destroyForcibly();
            throw new IOException("keytool " + String.join(" ", arguments) + " failed: " + output);
        }
    }
}
