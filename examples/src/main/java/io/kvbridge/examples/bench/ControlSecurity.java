package io.kvbridge.examples.bench;

import java.util.Locale;

/**
 * How the control connection of a two-host bench is protected, as one side saw it: TLS (which
 * keeps the transport metadata, addresses and agent names off the wire) or plain TCP, and the
 * shared secret's authentication of each message, which works with either.
 *
 * @param authenticated whether every message carries the shared secret's HMAC.
 * @param protocol the TLS protocol ({@code TLSv1.3}), or null over plain TCP.
 * @param cipherSuite the TLS cipher suite, or null over plain TCP.
 * @param handshakeMillis the TLS handshake's time on this side, from the TCP connection to the
 *     handshake's end (for an initiator that connected while the target was still starting, its
 *     start-up too: the target accepts once its transport and buffer are up); 0 over plain TCP.
 * @param peerCertificate the subject of the certificate the peer showed, or null when it showed none.
 * @param localCertificate whether this side showed a certificate.
 */
public record ControlSecurity(boolean authenticated, String protocol, String cipherSuite, double handshakeMillis, String peerCertificate,
        boolean localCertificate)
{
    /**
     * {@return a plain TCP connection's}
     *
     * @param authenticated whether the shared secret authenticates its messages.
     */
    static ControlSecurity plain(boolean authenticated)
    {
        return new ControlSecurity(authenticated, null, null, 0, null, false);
    }

    /** {@return whether the connection runs over TLS} */
    public boolean tls()
    {
        return protocol != null;
    }

    /** {@return the connection's protection in a few words, for progress lines and reports} */
    public String describe()
    {
        String secret = authenticated ? "messages authenticated with the shared secret" : "messages not authenticated (no --secret-file)";
        if (!tls()) {
            return "plain TCP, readable on the wire (--tls-* encrypt it); " + secret;
        }
        return String.format(Locale.ROOT, "%s %s, handshake %.1f ms, peer certificate %s, %s; %s", protocol, cipherSuite, handshakeMillis,
                peerCertificate == null ? "none" : peerCertificate, localCertificate ? "this side's certificate shown" : "this side showed none", secret);
    }
}
