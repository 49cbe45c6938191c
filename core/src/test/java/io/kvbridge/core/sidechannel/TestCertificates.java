package io.kvbridge.core.sidechannel;

import io.kvbridge.core.config.TlsFiles;
import io.kvbridge.core.config.TlsLoader;
import io.kvbridge.core.tls.SideChannelTls;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A test CA and certificates it signed, made once per test JVM with the JDK's keytool: a server
 * for 127.0.0.1, a server for another host, and a client. Each is written as PEM files (chain and
 * PKCS#8 key, the key readable by its owner only) and as a PKCS12 keystore with a password file.
 */
public final class TestCertificates
{
    /** The password of every keystore made here. */
    public static final String PASSWORD = "test-store-password";

    private static final boolean KEYTOOL_IN_PROCESS = keytoolInProcess();
    private static TestCertificates made;

    /** One certificate's files. */
    public record Identity(Path chainPem, Path keyPem, Path keystore, Path passwordFile)
    {
        /**
         * {@return TLS files with this identity's PEM chain and key}
         *
         * @param ca the CA bundle peers are checked against.
         */
        public TlsFiles pem(Path ca)
        {
            return new TlsFiles(chainPem, keyPem, null, null, ca, null, null, null, null);
        }
    }

    /** The CA bundle, PEM. */
    public final Path caPem;
    /** A server certificate with the SAN ip:127.0.0.1. */
    public final Identity server;
    /** A server certificate for another host only (dns:other.example, ip:10.9.9.9). */
    public final Identity otherHost;
    /** A client certificate (valid for 127.0.0.1 too, since a consumer also serves a side channel). */
    public final Identity client;

    private TestCertificates(Path directory)
            throws IOException, InterruptedException, GeneralSecurityException
    {
        keytool(directory, "-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=kvbridge test CA", "-ext",
                "bc:c", "-validity", "2", "-keystore", "ca.p12");
        keytool(directory, "-exportcert", "-rfc", "-alias", "ca", "-keystore", "ca.p12", "-file", "ca.pem");
        caPem = directory.resolve("ca.pem");
        server = identity(directory, "server", "san=ip:127.0.0.1");
        otherHost = identity(directory, "other", "san=dns:other.example,ip:10.9.9.9");
        client = identity(directory, "client", "san=ip:127.0.0.1");
    }

    /**
     * {@return the certificates, made on first use in a fresh temporary folder}
     */
    public static synchronized TestCertificates get()
    {
        if (made == null) {
            // test stores need no key stretching: the default iteration counts cost seconds on a loaded machine
            for (String count : List.of("keystore.pkcs12.certPbeIterationCount", "keystore.pkcs12.keyPbeIterationCount",
                    "keystore.pkcs12.macIterationCount")) {
                System.setProperty(count, "1");
            }
            long started = System.nanoTime();
            try {
                Path directory = Files.createTempDirectory("kvbridge-tls-");
                directory.toFile().deleteOnExit();
                made = new TestCertificates(directory);
                System.out.printf("test certificates made in %d ms (keytool %s)%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
                        KEYTOOL_IN_PROCESS ? "in process" : "as processes");
            }
            catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            catch (InterruptedException | GeneralSecurityException e) {
                throw new IllegalStateException("cannot make the test certificates", e);
            }
        }
        return made;
    }

    /**
     * Loads TLS settings from files, failing the test on a problem.
     *
     * @param files the files.
     * @return the settings.
     */
    public static SideChannelTls load(TlsFiles files)
    {
        List<String> problems = new ArrayList<>();
        SideChannelTls tls = TlsLoader.load(files, problems);
        if (!problems.isEmpty()) {
            throw new IllegalStateException(problems.toString());
        }
        return tls;
    }

    private Identity identity(Path directory, String name, String extension)
            throws IOException, InterruptedException, GeneralSecurityException
    {
        String store = name + ".p12";
        keytool(directory, "-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=kvbridge test " + name,
                "-validity", "2", "-keystore", store);
        keytool(directory, "-certreq", "-alias", name, "-keystore", store, "-file", name + ".csr");
        keytool(directory, "-gencert", "-rfc", "-alias", "ca", "-keystore", "ca.p12", "-infile", name + ".csr", "-outfile", name + ".crt", "-ext",
                extension, "-validity", "2");
        keytool(directory, "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem", "-keystore", store);
        keytool(directory, "-importcert", "-noprompt", "-alias", name, "-file", name + ".crt", "-keystore", store);
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (var in = Files.newInputStream(directory.resolve(store))) {
            keys.load(in, PASSWORD.toCharArray());
        }
        StringBuilder chain = new StringBuilder();
        for (Certificate certificate : keys.getCertificateChain(name)) {
            chain.append(pem("CERTIFICATE", certificate.getEncoded()));
        }
        Path chainPem = Files.writeString(directory.resolve(name + "-chain.pem"), chain);
        Key key = keys.getKey(name, PASSWORD.toCharArray());
        Path keyPem = ownerOnly(directory.resolve(name + "-key.pem"), pem("PRIVATE KEY", key.getEncoded()));
        Path password = ownerOnly(directory.resolve(name + ".password"), PASSWORD + "\n");
        Files.setPosixFilePermissions(directory.resolve(store), PosixFilePermissions.fromString("rw-------"));
        return new Identity(chainPem, keyPem, directory.resolve(store), password);
    }

    /** {@return DER bytes as a PEM block} */
    static String pem(String type, byte[] der)
    {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der) + "\n-----END " + type + "-----\n";
    }

    private static Path ownerOnly(Path file, String text)
            throws IOException
    {
        Files.writeString(file, text, StandardCharsets.US_ASCII);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        return file;
    }

    private static void keytool(Path directory, String... arguments)
            throws IOException, InterruptedException
    {
        List<String> command = new ArrayList<>(List.of(arguments));
        command.addAll(List.of("-storetype", "PKCS12", "-storepass", PASSWORD));
        if (!KEYTOOL_IN_PROCESS) {
            keytoolProcess(directory, command);
            return;
        }
        // in this JVM: a keytool process per step costs seconds on a loaded machine; paths are made absolute for it
        List<String> absolute = new ArrayList<>();
        for (int i = 0; i < command.size(); i++) {
            String argument = command.get(i);
            boolean names = i > 0 && List.of("-keystore", "-file", "-infile", "-outfile").contains(command.get(i - 1));
            absolute.add(names ? directory.resolve(argument).toString() : argument);
        }
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        int exit;
        try {
            Class<?> main = Class.forName("sun.security.tools.keytool.Main");
            exit = (int) main.getMethod("run", String[].class, PrintStream.class).invoke(main.getConstructor().newInstance(),
                    absolute.toArray(String[]::new), new PrintStream(output, true, StandardCharsets.UTF_8));
        }
        catch (ReflectiveOperationException e) {
            throw new IOException("keytool " + String.join(" ", arguments) + " failed: " + e.getCause(), e);
        }
        if (exit != 0) {
            throw new IOException("keytool " + String.join(" ", arguments) + " failed: " + output.toString(StandardCharsets.UTF_8));
        }
    }

    private static boolean keytoolInProcess()
    {
        // the build exports keytool's package to the tests; elsewhere the keytool program runs instead
        return Object.class.getModule().isExported("sun.security.tools.keytool", TestCertificates.class.getModule());
    }

    private static void keytoolProcess(Path directory, List<String> arguments)
            throws IOException, InterruptedException
    {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "keytool").toString()));
        command.addAll(arguments);
        Process process = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(30, TimeUnit.SECONDS) || process.exitValue() != 0) {
            process.destroyForcibly();
            throw new IOException("keytool " + String.join(" ", arguments) + " failed: " + output);
        }
    }
}
