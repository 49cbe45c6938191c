package io.kvbridge.core.tls;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.security.GeneralSecurityException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;

/**
 * TLS 1.3 below the side channel's framing, so that geometry metadata and addresses are not
 * readable on the wire and a peer proves who it is with a certificate. One value serves both the
 * server (its certificate, and whether it asks clients for theirs) and the client (what it trusts,
 * and whether it checks the server's host name as HTTPS does: an IP address against an IP SAN).
 * Every handshake is bounded by a deadline after which its socket is closed, however slowly the
 * peer sends its records.
 */
public final class SideChannelTls
{
    private static final String PROTOCOL = "TLSv1.3";
    private static final String[] PROTOCOLS = {PROTOCOL};
    // closes sockets whose handshake outlives its deadline: a read timeout alone lets a peer drip a record per timeout
    private static final ScheduledThreadPoolExecutor WATCHDOG = watchdog();

    /** Whether the server asks a client for its certificate. */
    public enum ClientAuth
    {
        /** Clients are not asked. */
        NONE,
        /** Clients are asked; one without a certificate is still served. */
        WANT,
        /** Clients must present a certificate the server trusts (mutual TLS). */
        REQUIRE
    }

    private final SSLContext context;
    private final boolean hasKey;
    private final ClientAuth clientAuth;
    private final boolean verifyHostname;

    private SideChannelTls(SSLContext context, boolean hasKey, ClientAuth clientAuth, boolean verifyHostname)
    {
        this.context = context;
        this.hasKey = hasKey;
        this.clientAuth = clientAuth;
        this.verifyHostname = verifyHostname;
    }

    /**
     * Creates the TLS settings of an engine's side channels.
     *
     * @param keyManagers this engine's certificate and key; null when it only connects, without a
     *     certificate of its own.
     * @param trustManagers what peers' certificates are checked against; null for the JDK's default
     *     trust store.
     * @param clientAuth whether a server asks clients for their certificate.
     * @param verifyHostname whether a client checks that the server's certificate names the host it
     *     connected to.
     * @return the settings.
     * @throws KvBridgeException with {@link ErrorCode#CONFIG_INVALID} when the JDK offers no TLS 1.3
     *     or refuses the key material.
     */
    public static SideChannelTls of(KeyManager[] keyManagers, TrustManager[] trustManagers, ClientAuth clientAuth, boolean verifyHostname)
    {
        requireNonNull(clientAuth, "clientAuth is null");
        try {
            SSLContext context = SSLContext.getInstance(PROTOCOL);
            context.init(keyManagers, trustManagers, null);
            return new SideChannelTls(context, keyManagers != null && keyManagers.length > 0, clientAuth, verifyHostname);
        }
        catch (GeneralSecurityException e) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "cannot set up TLS 1.3 for the side channel: " + e.getMessage()
                    + " (is this a JDK with TLS 1.3, and are the certificate and key usable?)", e);
        }
    }

    /** {@return whether this engine has a certificate and key, which a server needs} */
    public boolean hasKey()
    {
        return hasKey;
    }

    /** {@return whether a server asks clients for their certificate} */
    public ClientAuth clientAuth()
    {
        return clientAuth;
    }

    /** {@return whether a client checks the server's host name} */
    public boolean verifyHostname()
    {
        return verifyHostname;
    }

    /**
     * Creates an unbound server socket whose connections speak TLS 1.3 and ask for client
     * certificates as configured; each accepted socket's handshake is run with {@link #handshake}.
     *
     * @param engineId names the server in the refusal.
     * @return the socket, to be bound.
     * @throws KvBridgeException with {@link ErrorCode#CONFIG_INVALID} when there is no certificate to serve with.
     * @throws IOException when the socket cannot be created.
     */
    public ServerSocket newServerSocket(String engineId)
            throws IOException
    {
        KvBridgeException.check(hasKey, ErrorCode.CONFIG_INVALID,
                "the side channel of engine %s is configured for TLS but has no certificate to serve with (set tls.cert_file and tls.key_file,"
                        + " or tls.keystore_file)", engineId);
        SSLServerSocket socket = (SSLServerSocket) context.getServerSocketFactory().createServerSocket();
        SSLParameters parameters = socket.getSSLParameters();
        parameters.setProtocols(PROTOCOLS);
        switch (clientAuth) {
            case REQUIRE -> parameters.setNeedClientAuth(true);
            case WANT -> parameters.setWantClientAuth(true);
            case NONE -> parameters.setNeedClientAuth(false);
        }
        socket.setSSLParameters(parameters);
        return socket;
    }

    /**
     * Layers TLS over a connected socket as its client; closing the result closes the socket. The
     * handshake is run with {@link #handshake}.
     *
     * @param connected the connected socket.
     * @param address the address it connected to: the host name checked against the server's certificate.
     * @return the TLS socket, its handshake not begun.
     * @throws IOException when the socket cannot be layered.
     */
    public SSLSocket overClient(Socket connected, InetSocketAddress address)
            throws IOException
    {
        SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket(connected, address.getHostString(), address.getPort(), true);
        SSLParameters parameters = socket.getSSLParameters();
        parameters.setProtocols(PROTOCOLS);
        if (verifyHostname) {
            parameters.setEndpointIdentificationAlgorithm("HTTPS");
        }
        socket.setSSLParameters(parameters);
        socket.setUseClientMode(true);
        return socket;
    }

    /**
     * Runs a socket's handshake, closing the socket when it is not done by the deadline.
     *
     * @param socket the socket, client or server side.
     * @param deadlineNanos on {@link System#nanoTime()}.
     * @throws SocketTimeoutException when the deadline passes.
     * @throws IOException when the handshake fails ({@link SSLException} for TLS's own failures).
     */
    public static void handshake(SSLSocket socket, long deadlineNanos)
            throws IOException
    {
        long leftNanos = deadlineNanos - System.nanoTime();
        if (leftNanos <= 0) {
            throw new SocketTimeoutException("the TLS handshake's deadline passed before it began");
        }
        socket.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(leftNanos))));
        ScheduledFuture<?> closer = WATCHDOG.schedule(() -> closeQuietly(socket), leftNanos, TimeUnit.NANOSECONDS);
        try {
            socket.startHandshake();
        }
        catch (IOException e) {
            if (System.nanoTime() - deadlineNanos >= 0) {
                throw new SocketTimeoutException("the TLS handshake did not finish by its deadline: " + e.getMessage());
            }
            throw e;
        }
        finally {
            closer.cancel(false);
        }
    }

    /**
     * Tells whether a frame header is really the start of a TLS record (an alert or a handshake,
     * version 3.x): what a plain client reads from a TLS server, and a plain server from a TLS client.
     *
     * @param frameLength the first four bytes read, big-endian, as a frame length.
     * @return whether they are a TLS record's header.
     */
    public static boolean looksLikeTlsRecord(long frameLength)
    {
        int type = (int) (frameLength >>> 24);
        return (type == 0x15 || type == 0x16) && (frameLength >>> 16 & 0xff) == 0x03;
    }

    private static void closeQuietly(Socket socket)
    {
        try {
            socket.close();
        }
        catch (IOException ignored) {
            // closing only ends a handshake that ran out of time
        }
    }

    private static ScheduledThreadPoolExecutor watchdog()
    {
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1,
                Thread.ofPlatform().daemon().name("kvbridge-side-channel-tls-deadline").factory());
        // handshakes that finish in time cancel their closer: do not keep them queued until their deadline
        executor.setRemoveOnCancelPolicy(true);
        return executor;
    }
}
