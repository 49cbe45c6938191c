package io.kvbridge.core.config;

import io.kvbridge.core.tls.SideChannelTls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;

/**
 * Checks and loads the side channel's TLS material. Every file is untrusted input: read to a
 * bound, the private key, the keystore and the password files refused when every user of the host
 * may read them (as the secret file is), and every problem of every file reported at once with the
 * value and the fix. The private key is PKCS#8 PEM ({@code BEGIN PRIVATE KEY}), RSA, EC or Ed25519.
 */
public final class TlsLoader
{
    /** The longest certificate, CA bundle or keystore file read: a bundle of a few hundred certificates. */
    static final int MAX_FILE_BYTES = 1 << 20;
    /** The longest private key or password file read. */
    static final int MAX_KEY_BYTES = 64 << 10;

    private static final String PREFIX = "kv_connector_extra_config.tls.";
    private static final String BEGIN_KEY = "-----BEGIN PRIVATE KEY-----";
    private static final String END_KEY = "-----END PRIVATE KEY-----";
    private static final String TO_PKCS8 = "convert it: openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8";
    private static final List<String> KEY_ALGORITHMS = List.of("RSA", "EC", "Ed25519", "Ed448");
    private static final char[] NO_PASSWORD = new char[0];

    private TlsLoader()
    {
    }

    /**
     * Loads the TLS settings the files describe.
     *
     * @param files what the configuration gives; {@link TlsFiles#EMPTY} for no TLS.
     * @param problems where every problem is added.
     * @return the settings; null when no TLS is configured or a problem was found.
     */
    public static SideChannelTls load(TlsFiles files, List<String> problems)
    {
        if (!files.given()) {
            return null;
        }
        int before = problems.size();
        KeyManager[] keyManagers = keyManagers(files, problems);
        TrustManager[] trustManagers = trustManagers(files, problems);
        if (files.clientAuth() != null && files.clientAuth() != SideChannelTls.ClientAuth.NONE && files.caFile() == null
                && files.truststoreFile() == null) {
            problems.add(PREFIX + "client_auth=" + files.clientAuth().name().toLowerCase(java.util.Locale.ROOT)
                    + " needs the CA that signs the clients' certificates: set tls.ca_file or tls.truststore_file");
        }
        if (problems.size() > before) {
            return null;
        }
        try {
            return SideChannelTls.of(keyManagers, trustManagers, files.clientAuth() == null ? SideChannelTls.ClientAuth.NONE : files.clientAuth(),
                    files.verifyHostname() == null || files.verifyHostname());
        }
        catch (RuntimeException e) {
            problems.add(e.getMessage());
            return null;
        }
    }

    private static KeyManager[] keyManagers(TlsFiles files, List<String> problems)
    {
        boolean pem = files.certFile() != null || files.keyFile() != null;
        if (pem && files.keystoreFile() != null) {
            problems.add(PREFIX + "keystore_file and tls.cert_file/tls.key_file are both set; set either the PEM files or the keystore");
            return null;
        }
        KeyStore keys;
        char[] password;
        if (pem) {
            if (files.certFile() == null || files.keyFile() == null) {
                problems.add(PREFIX + (files.certFile() == null ? "cert_file" : "key_file") + " is missing: tls.cert_file and tls.key_file go together");
                return null;
            }
            List<X509Certificate> chain = certificates("cert_file", files.certFile(), problems);
            PrivateKey key = privateKey(files.keyFile(), chain, problems);
            if (chain == null || key == null) {
                return null;
            }
            password = NO_PASSWORD;
            try {
                keys = KeyStore.getInstance("PKCS12");
                keys.load(null, null);
                keys.setKeyEntry("side-channel", key, password, chain.toArray(new Certificate[0]));
            }
            catch (GeneralSecurityException | IOException e) {
                problems.add(PREFIX + "key_file=" + files.keyFile() + " does not go with tls.cert_file=" + files.certFile() + ": " + e.getMessage());
                return null;
            }
        }
        else if (files.keystoreFile() != null) {
            if (files.keystorePasswordFile() == null) {
                problems.add(PREFIX + "keystore_file=" + files.keystoreFile() + " needs tls.keystore_password_file, the file holding its password");
                return null;
            }
            password = password("keystore_password_file", files.keystorePasswordFile(), problems);
            keys = password == null ? null : keystore("keystore_file", files.keystoreFile(), password, true, problems);
            if (keys == null) {
                return null;
            }
        }
        else {
            return null;
        }
        try {
            KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            factory.init(keys, password);
            return factory.getKeyManagers();
        }
        catch (GeneralSecurityException e) {
            problems.add(PREFIX + (pem ? "key_file=" + files.keyFile() : "keystore_file=" + files.keystoreFile()) + " cannot be used: "
                    + e.getMessage() + " (a keystore's key must have the keystore's password)");
            return null;
        }
    }

    private static TrustManager[] trustManagers(TlsFiles files, List<String> problems)
    {
        if (files.caFile() != null && files.truststoreFile() != null) {
            problems.add(PREFIX + "ca_file and tls.truststore_file are both set; set one of them");
            return null;
        }
        KeyStore trusted;
        if (files.caFile() != null) {
            List<X509Certificate> authorities = certificates("ca_file", files.caFile(), problems);
            if (authorities == null) {
                return null;
            }
            try {
                trusted = KeyStore.getInstance("PKCS12");
                trusted.load(null, null);
                for (int i = 0; i < authorities.size(); i++) {
                    trusted.setCertificateEntry("ca-" + i, authorities.get(i));
                }
            }
            catch (GeneralSecurityException | IOException e) {
                problems.add(PREFIX + "ca_file=" + files.caFile() + " cannot be used: " + e.getMessage());
                return null;
            }
        }
        else if (files.truststoreFile() != null) {
            char[] password = files.truststorePasswordFile() == null ? null : password("truststore_password_file", files.truststorePasswordFile(), problems);
            trusted = keystore("truststore_file", files.truststoreFile(), password, false, problems);
            if (trusted == null) {
                return null;
            }
        }
        else {
            // the JDK's own trust store, as a browser trusts the public CAs
            return null;
        }
        try {
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(trusted);
            return factory.getTrustManagers();
        }
        catch (GeneralSecurityException e) {
            problems.add(PREFIX + (files.caFile() != null ? "ca_file=" + files.caFile() : "truststore_file=" + files.truststoreFile())
                    + " cannot be used: " + e.getMessage());
            return null;
        }
    }

    private static List<X509Certificate> certificates(String key, Path file, List<String> problems)
    {
        String named = PREFIX + key + "=" + file;
        byte[] bytes = read(named, file, MAX_FILE_BYTES, false, problems);
        if (bytes == null) {
            return null;
        }
        try {
            List<X509Certificate> certificates = new ArrayList<>();
            for (Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(bytes))) {
                certificates.add((X509Certificate) certificate);
            }
            if (certificates.isEmpty()) {
                problems.add(named + " holds no certificate (expected: PEM blocks -----BEGIN CERTIFICATE-----)");
                return null;
            }
            return certificates;
        }
        catch (CertificateException | ClassCastException e) {
            problems.add(named + " is not a PEM certificate file (expected: -----BEGIN CERTIFICATE----- blocks): " + e.getMessage());
            return null;
        }
    }

    private static PrivateKey privateKey(Path file, List<X509Certificate> chain, List<String> problems)
    {
        String named = PREFIX + "key_file=" + file;
        byte[] bytes = read(named, file, MAX_KEY_BYTES, true, problems);
        if (bytes == null) {
            return null;
        }
        String text = new String(bytes, StandardCharsets.US_ASCII);
        int begin = text.indexOf(BEGIN_KEY);
        int end = text.indexOf(END_KEY);
        if (begin < 0 || end < begin) {
            String kind = text.contains("ENCRYPTED PRIVATE KEY") ? "an encrypted key" : text.contains("RSA PRIVATE KEY") ? "a PKCS#1 RSA key"
                    : text.contains("EC PRIVATE KEY") ? "a SEC1 EC key" : "no PEM private key";
            problems.add(named + " holds " + kind + " (expected: an unencrypted PKCS#8 key, -----BEGIN PRIVATE KEY-----; " + TO_PKCS8 + ")");
            return null;
        }
        byte[] der;
        try {
            der = Base64.getMimeDecoder().decode(text.substring(begin + BEGIN_KEY.length(), end));
        }
        catch (IllegalArgumentException e) {
            problems.add(named + " is not valid base64 between its BEGIN and END lines: " + e.getMessage());
            return null;
        }
        // the certificate names the key's algorithm; the others are tried for a key that does not go with it
        Set<String> algorithms = new LinkedHashSet<>();
        if (chain != null) {
            algorithms.add(chain.getFirst().getPublicKey().getAlgorithm());
        }
        algorithms.addAll(KEY_ALGORITHMS);
        try {
            for (String algorithm : algorithms) {
                try {
                    return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
                }
                catch (GeneralSecurityException e) {
                    // not this algorithm
                }
            }
        }
        finally {
            Arrays.fill(der, (byte) 0);
        }
        problems.add(named + " is not an RSA, EC or Ed25519 PKCS#8 key (" + TO_PKCS8 + ")");
        return null;
    }

    private static KeyStore keystore(String key, Path file, char[] password, boolean holdsKey, List<String> problems)
    {
        String named = PREFIX + key + "=" + file;
        byte[] bytes = read(named, file, MAX_FILE_BYTES, holdsKey, problems);
        if (bytes == null) {
            return null;
        }
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(new ByteArrayInputStream(bytes), password);
            if (store.size() == 0) {
                problems.add(named + " holds no entry");
                return null;
            }
            return store;
        }
        catch (GeneralSecurityException | IOException e) {
            problems.add(named + " cannot be opened as a PKCS12 keystore with the password given: " + e.getMessage()
                    + " (check the password file; convert a JKS store: keytool -importkeystore -deststoretype PKCS12)");
            return null;
        }
    }

    private static char[] password(String key, Path file, List<String> problems)
    {
        String named = PREFIX + key + "=" + file;
        byte[] bytes = read(named, file, SecretFile.MAX_BYTES, true, problems);
        if (bytes == null) {
            return null;
        }
        String text = new String(bytes, StandardCharsets.UTF_8);
        // one trailing line break, as echo writes it, is not part of the password
        text = text.endsWith("\r\n") ? text.substring(0, text.length() - 2) : text.endsWith("\n") ? text.substring(0, text.length() - 1) : text;
        return text.toCharArray();
    }

    private static byte[] read(String named, Path file, int maxBytes, boolean secret, List<String> problems)
    {
        if (!Files.exists(file)) {
            problems.add(named + " does not exist");
            return null;
        }
        try {
            byte[] bytes;
            if (secret) {
                bytes = SecretFile.readPrivate(named, file, maxBytes, problems);
            }
            else if (!Files.isRegularFile(file)) {
                problems.add(named + " is not a regular file");
                return null;
            }
            else {
                bytes = SecretFile.readBounded(file, maxBytes);
            }
            if (bytes != null && bytes.length > maxBytes) {
                problems.add(named + " is longer than " + Sizes.format(maxBytes) + "; is this the right file?");
                return null;
            }
            return bytes;
        }
        catch (IOException | SecurityException e) {
            problems.add(named + " cannot be read: " + e.getMessage());
            return null;
        }
    }
}
