package io.kvbridge.core.config;

import io.kvbridge.core.tls.SideChannelTls.ClientAuth;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Where an engine's side channel TLS material lives, as the {@code tls} object of the configuration
 * or the {@code KVBRIDGE_TLS_*} variables give it. Every value is optional ({@code null}: not given
 * here), so that sources layer value by value; {@link TlsLoader} checks and loads them.
 *
 * @param certFile PEM certificate chain, this engine's certificate first.
 * @param keyFile PEM PKCS#8 private key ({@code BEGIN PRIVATE KEY}) of that certificate.
 * @param keystoreFile PKCS12 keystore holding the certificate and key, in place of the two PEM files.
 * @param keystorePasswordFile file holding the keystore's password.
 * @param caFile PEM bundle of the certificates that peers' certificates must chain to.
 * @param truststoreFile PKCS12 truststore, in place of the CA bundle.
 * @param truststorePasswordFile file holding the truststore's password; none for a truststore without one.
 * @param clientAuth whether the server asks clients for their certificate.
 * @param verifyHostname whether a client checks the server's host name; true unless given.
 */
public record TlsFiles(
        Path certFile,
        Path keyFile,
        Path keystoreFile,
        Path keystorePasswordFile,
        Path caFile,
        Path truststoreFile,
        Path truststorePasswordFile,
        ClientAuth clientAuth,
        Boolean verifyHostname)
{
    /** Nothing given: the side channel runs without TLS. */
    public static final TlsFiles EMPTY = new TlsFiles(null, null, null, null, null, null, null, null, null);

    /** {@return whether any TLS value is given, which turns TLS on} */
    public boolean given()
    {
        return !equals(EMPTY);
    }

    /**
     * Layers another source over this one, value by value.
     *
     * @param other the source that takes precedence.
     * @return the combination.
     */
    public TlsFiles overriddenBy(TlsFiles other)
    {
        return new TlsFiles(pick(certFile, other.certFile), pick(keyFile, other.keyFile), pick(keystoreFile, other.keystoreFile),
                pick(keystorePasswordFile, other.keystorePasswordFile), pick(caFile, other.caFile), pick(truststoreFile, other.truststoreFile),
                pick(truststorePasswordFile, other.truststorePasswordFile), pick(clientAuth, other.clientAuth),
                pick(verifyHostname, other.verifyHostname));
    }

    /**
     * Parses a {@code client_auth} value.
     *
     * @param where the key or variable, for the message.
     * @param text {@code none}, {@code want} or {@code require}.
     * @param problems where a problem is added.
     * @return the value, or null with a problem added.
     */
    static ClientAuth clientAuth(String where, String text, List<String> problems)
    {
        for (ClientAuth value : ClientAuth.values()) {
            if (value.name().equalsIgnoreCase(text)) {
                return value;
            }
        }
        problems.add(where + "=" + text + " is not none, want or require (require: mutual TLS, every client shows a certificate the CA signed)");
        return null;
    }

    /**
     * Parses a {@code verify_hostname} value given as text.
     *
     * @param where the key or variable, for the message.
     * @param text {@code true} or {@code false}.
     * @param problems where a problem is added.
     * @return the value, or null with a problem added.
     */
    static Boolean bool(String where, String text, List<String> problems)
    {
        return switch (text.toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> {
                problems.add(where + "=" + text + " is not true or false");
                yield null;
            }
        };
    }

    private static <T> T pick(T base, T override)
    {
        return override != null ? override : base;
    }
}
