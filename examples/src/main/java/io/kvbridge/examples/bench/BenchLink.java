package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.tools.ControlEnvelope;
import io.kvbridge.core.tools.ControlMessage;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSocket;

/**
 * The control connection of a two-host bench: one TCP connection from the initiator to the target,
 * over which the initiator asks and the target answers, one request at a time. Each message is a
 * msgpack map with a {@code type} ({@link ControlMessage}), inside the side channel's envelope ({@link ControlEnvelope}:
 * HMAC-SHA256 with nonce and timestamp window when both sides hold the same secret, and each reply
 * bound to its request's nonce), in a frame of a 4-byte length. Everything read is untrusted: a
 * frame longer than {@link #MAX_FRAME_BYTES} is refused before it is read, the map is decoded within
 * the side channel's limits, and every read has a deadline, so a peer that stops, drips bytes or
 * sends garbage costs a bounded wait and a typed error. With {@link SideChannelTls} the connection
 * runs over TLS 1.3 as the side channel does, its handshake bounded by the same deadlines; a plain
 * end against a TLS one (either way round) is told so in one line.
 */
final class BenchLink implements AutoCloseable
{
    /** Largest frame accepted: the biggest message carries a transport's metadata, a few KiB for UCX. */
    static final int MAX_FRAME_BYTES = 1 << 20;
    /** The protocol's version; both sides must speak the same one (2: the {@code probe} request). */
    static final int VERSION = 2;
    private static final long CONNECT_RETRY_NANOS = 50_000_000L;
    private static final int MAX_ERROR_CHARS = 1_024;

    /**
     * One message read: its map and the sender's nonce (to answer it).
     *
     * @param message the decoded map; its {@code type} was read.
     * @param type the message's type.
     * @param nonce the envelope's nonce, empty without a secret.
     */
    record Received(ControlMessage message, String type, byte[] nonce)
    {
    }

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final ControlEnvelope authenticator;
    /** For the one reply a receiver can send to a request it could not authenticate: the refusal, which carries no MAC. */
    private final ControlEnvelope plain = ControlEnvelope.plain();
    private final String peer;
    /** Whether this end is the initiator, which asks; the target answers. */
    private final boolean initiator;
    private final ControlSecurity security;

    private BenchLink(Socket socket, ControlEnvelope authenticator, boolean initiator, ControlSecurity security) throws IOException
    {
        this.socket = requireNonNull(socket, "socket is null");
        this.authenticator = requireNonNull(authenticator, "authenticator is null");
        this.initiator = initiator;
        this.security = requireNonNull(security, "security is null");
        socket.setTcpNoDelay(true);
        this.in = socket.getInputStream();
        this.out = new BufferedOutputStream(socket.getOutputStream());
        this.peer = peerOf(socket);
    }

    /**
     * Serves an initiator the target accepted: its TLS handshake first when the target's server
     * socket speaks TLS.
     *
     * @param socket the accepted socket; an {@link SSLSocket} from a TLS server socket.
     * @param authenticator the envelopes.
     * @param deadline {@link System#nanoTime()} by which the handshake must be done.
     * @return the link.
     * @throws KvBridgeException with {@link ErrorCode#HANDSHAKE_FAILED} when the handshake failed,
     *     {@link ErrorCode#DEADLINE_EXCEEDED} when it did not end in time; the socket is then closed.
     */
    static BenchLink accepted(Socket socket, ControlEnvelope authenticator, long deadline) throws IOException
    {
        if (!(socket instanceof SSLSocket tls)) {
            return new BenchLink(socket, authenticator, false, ControlSecurity.plain(authenticator.authenticated()));
        }
        long start = System.nanoTime();
        String peer = peerOf(socket);
        try {
            SideChannelTls.handshake(tls, deadline);
            return new BenchLink(tls, authenticator, false, security(tls, authenticator, start));
        }
        catch (SocketTimeoutException e) {
            closeQuietly(tls);
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, "the TLS handshake with initiator " + peer
                    + " did not finish before its deadline (is it an initiator without --tls-ca, or stopped?)", e);
        }
        catch (IOException e) {
            closeQuietly(tls);
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, "the TLS handshake with initiator " + peer + " failed: " + e.getMessage()
                    + " (does it connect with TLS, --tls-ca? with --tls-client-auth require, does it show a certificate, --tls-cert and --tls-key,"
                    + " that this target's --tls-ca signed?)", e);
        }
    }

    /**
     * Builds the envelopes of a link: authenticated with a secret, plain without one.
     *
     * @param secret the shared secret, or null.
     * @return the authenticator.
     */
    static ControlEnvelope authenticator(byte[] secret)
    {
        return secret == null ? ControlEnvelope.plain() : ControlEnvelope.withSecret(secret);
    }

    /**
     * Connects to a target, trying again while nothing listens yet (a target that is still starting)
     * until the deadline.
     *
     * @param address the target's {@code --listen} address.
     * @param timeout how long to keep trying, the TLS handshake included.
     * @param authenticator the envelopes.
     * @param tls the TLS to connect with, or null for plain TCP.
     * @return the link.
     * @throws KvBridgeException with {@link ErrorCode#PEER_UNKNOWN} when nothing accepted within the
     *     timeout, {@link ErrorCode#HANDSHAKE_FAILED} when the TLS handshake failed,
     *     {@link ErrorCode#DEADLINE_EXCEEDED} when it did not end within the timeout.
     */
    static BenchLink connect(InetSocketAddress address, Duration timeout, ControlEnvelope authenticator, SideChannelTls tls)
    {
        long deadline = System.nanoTime() + timeout.toNanos();
        IOException last = null;
        while (true) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, String.format(Locale.ROOT,
                        "no bench target answered at %s within timeout=%d ms (%s); start `kvbridge bench --role target --listen %s` there first,"
                                + " or give a longer --timeout", hostPort(address), timeout.toMillis(), last == null ? "no attempt" : last.getMessage(),
                        hostPort(address)));
            }
            Socket socket = new Socket();
            try {
                socket.connect(address, (int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
            }
            catch (ConnectException | SocketTimeoutException e) {
                last = e;
                closeQuietly(socket);
                LockSupport.parkNanos(Math.min(CONNECT_RETRY_NANOS, Math.max(0, deadline - System.nanoTime())));
                continue;
            }
            catch (IOException e) {
                closeQuietly(socket);
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot connect to the bench target at " + hostPort(address) + ": " + e.getMessage(), e);
            }
            if (tls == null) {
                try {
                    return new BenchLink(socket, authenticator, true, ControlSecurity.plain(authenticator.authenticated()));
                }
                catch (IOException e) {
                    closeQuietly(socket);
                    throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot use the connection to the bench target at " + hostPort(address) + ": "
                            + e.getMessage(), e);
                }
            }
            return overTls(socket, address, deadline, timeout, authenticator, tls);
        }
    }

    /** Runs the client's TLS handshake on a connected socket, within what is left of the connect deadline. */
    private static BenchLink overTls(Socket socket, InetSocketAddress address, long deadline, Duration timeout, ControlEnvelope authenticator,
            SideChannelTls tls)
    {
        long start = System.nanoTime();
        Socket open = socket;
        try {
            SSLSocket secured = tls.overClient(socket, address);
            open = secured;
            SideChannelTls.handshake(secured, deadline);
            return new BenchLink(secured, authenticator, true, security(secured, authenticator, start));
        }
        catch (SocketTimeoutException e) {
            closeQuietly(open);
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, String.format(Locale.ROOT,
                    "the TLS handshake with the bench target at %s did not finish within timeout=%d ms (is it a target started with --tls-cert, and alive?)",
                    hostPort(address), timeout.toMillis()), e);
        }
        catch (SSLException e) {
            closeQuietly(open);
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                    "the TLS handshake with the bench target at %s failed: %s (does it serve TLS, --tls-cert and --tls-key? is its certificate signed by"
                            + " --tls-ca and issued for %s, or is --tls-no-verify-hostname meant?)", hostPort(address), e.getMessage(), address.getHostString()), e);
        }
        catch (IOException e) {
            closeQuietly(open);
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                    "the TLS handshake with the bench target at %s failed: %s (a target started without --tls-cert closes a connection that begins"
                            + " with TLS: start it with --tls-cert and --tls-key, or this initiator without --tls-*)", hostPort(address), e.getMessage()), e);
        }
    }

    private static ControlSecurity security(SSLSocket socket, ControlEnvelope authenticator, long start)
    {
        double millis = (System.nanoTime() - start) / 1e6;
        SSLSession session = socket.getSession();
        String peerCertificate;
        try {
            peerCertificate = session.getPeerPrincipal().getName();
        }
        catch (SSLPeerUnverifiedException e) {
            peerCertificate = null;
        }
        return new ControlSecurity(authenticator.authenticated(), session.getProtocol(), session.getCipherSuite(), millis,
                peerCertificate == null ? null : bounded(peerCertificate), session.getLocalPrincipal() != null);
    }

    /**
     * Sends a request and waits for its reply.
     *
     * @param request the request's map, with its {@code type}.
     * @param expected the reply's type.
     * @param timeout how long the reply may take.
     * @return the reply.
     * @throws KvBridgeException with the target's code when it answered with an error,
     *     {@link ErrorCode#DEADLINE_EXCEEDED} when no reply came in time,
     *     {@link ErrorCode#HANDSHAKE_FAILED} when the target closed the connection, or the
     *     envelope's and decoder's errors.
     */
    ControlMessage call(byte[] request, String expected, Duration timeout)
    {
        long deadline = System.nanoTime() + timeout.toNanos();
        ControlEnvelope.Message sealed = authenticator.sealRequest(request);
        send(sealed.bytes());
        byte[] frame = readFrame(deadline, "reply");
        if (frame == null) {
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, "the bench target at " + peer
                    + " closed the control connection before it answered (did it stop, or time out?" + tlsHint() + ")");
        }
        byte[] opened;
        try {
            opened = authenticator.openReply(frame, sealed.nonce());
        }
        catch (KvBridgeException e) {
            throw plainRefusal(frame, e);
        }
        ControlMessage reply = ControlMessage.decode(opened, "bench reply");
        String type = reply.type();
        if (type.equals("error")) {
            ErrorCode code = reply.optionalErrorCode("code", ErrorCode.PROTOCOL_ERROR);
            throw new KvBridgeException(code, "the bench target at " + peer + " refused: " + bounded(reply.optionalString("message", "no reason given")));
        }
        if (!type.equals(expected)) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "the bench target at " + peer + " answered type=" + bounded(type) + " (expected: " + expected + ")");
        }
        return reply;
    }

    /**
     * Reads the next request.
     *
     * @param deadline {@link System#nanoTime()} by which it must have arrived.
     * @return the request, or null when the initiator closed the connection cleanly.
     */
    Received receive(long deadline)
    {
        byte[] frame = readFrame(deadline, "request");
        if (frame == null) {
            return null;
        }
        ControlEnvelope.Message opened;
        try {
            opened = authenticator.openRequest(frame);
        }
        catch (KvBridgeException e) {
            if (e.code() == ErrorCode.AUTHENTICATION_FAILED) {
                // said once, without a MAC (there is no key both sides share), then the connection ends
                send(plain.sealReply(refusal(e), new byte[0]));
            }
            throw e;
        }
        ControlMessage request = ControlMessage.decode(opened.bytes(), "bench request");
        return new Received(request, request.type(), opened.nonce());
    }

    /**
     * Answers a request.
     *
     * @param reply the reply's map, with its {@code type}.
     * @param request the request it answers.
     */
    void reply(byte[] reply, Received request)
    {
        send(authenticator.sealReply(reply, request.nonce()));
    }

    /**
     * Answers a request with a refusal.
     *
     * @param failure why.
     * @param request the request it answers.
     */
    void refuse(KvBridgeException failure, Received request)
    {
        reply(refusal(failure), request);
    }

    private static byte[] refusal(KvBridgeException failure)
    {
        return ControlMessage.builder("error").put("code", failure.code()).put("message", bounded(failure.getMessage())).encode();
    }

    /**
     * A reply that fails authentication may be the peer's refusal of ours, which it cannot seal: that
     * one is reported as what it says, anything else as the authentication failure it is.
     */
    private KvBridgeException plainRefusal(byte[] frame, KvBridgeException failure)
    {
        try {
            ControlMessage reply = ControlMessage.decode(plain.openReply(frame, new byte[0]), "bench reply");
            if (reply.type().equals("error") && reply.optionalErrorCode("code", null) == ErrorCode.AUTHENTICATION_FAILED) {
                return new KvBridgeException(ErrorCode.AUTHENTICATION_FAILED, "the bench target at " + peer + " could not authenticate this initiator: "
                        + bounded(reply.optionalString("message", "no reason given")) + " (give both hosts the same --secret-file)", failure);
            }
        }
        catch (KvBridgeException e) {
            failure.addSuppressed(e);
        }
        return failure;
    }

    /** {@return this end's address on the connection: the interface that reaches the peer} */
    String localHost()
    {
        return socket.getLocalAddress().getHostAddress();
    }

    /** {@return the peer's address, for messages} */
    String peer()
    {
        return peer;
    }

    /** {@return how this connection is protected} */
    ControlSecurity security()
    {
        return security;
    }

    private void send(byte[] body)
    {
        try {
            int length = body.length;
            out.write(new byte[] {(byte) (length >>> 24), (byte) (length >>> 16), (byte) (length >>> 8), (byte) length});
            out.write(body);
            out.flush();
        }
        catch (IOException e) {
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, "cannot write to the bench peer at " + peer + ": " + e.getMessage()
                    + (initiator ? " (" + tlsHint().strip() + ")" : ""), e);
        }
    }

    /** @return the frame's body, or null when the stream ended cleanly before a frame began. */
    private byte[] readFrame(long deadline, String what)
    {
        byte[] header = new byte[4];
        if (!readFully(header, deadline, what, true)) {
            return null;
        }
        long length = (header[0] & 0xffL) << 24 | (header[1] & 0xffL) << 16 | (header[2] & 0xffL) << 8 | header[3] & 0xffL;
        if (!security.tls() && SideChannelTls.looksLikeTlsRecord(length)) {
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, initiator
                    ? "the bench target at " + peer + " answered with TLS, but this initiator connects without it: give it --tls-ca FILE,"
                            + " the CA that signed the target's --tls-cert"
                    : "initiator " + peer + " speaks TLS, but this target was started without it: start it with --tls-cert FILE --tls-key FILE,"
                            + " or the initiator without --tls-*");
        }
        if (length == 0 || length > MAX_FRAME_BYTES) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "bench %s frame from %s has length=%d, outside [1, %d]; refused without reading it (is the peer a kvbridge bench?)",
                    what, peer, length, MAX_FRAME_BYTES));
        }
        byte[] body = new byte[(int) length];
        readFully(body, deadline, what, false);
        return body;
    }

    /**
     * Fills the buffer, each read bounded by what is left of the deadline, so a peer that drips bytes
     * cannot stretch the wait.
     *
     * @return false when the stream ended before the first byte and {@code endAllowed}.
     */
    private boolean readFully(byte[] buffer, long deadline, String what, boolean endAllowed)
    {
        int read = 0;
        try {
            while (read < buffer.length) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw timedOut(what);
                }
                socket.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
                int got = in.read(buffer, read, buffer.length - read);
                if (got < 0) {
                    if (read == 0 && endAllowed) {
                        return false;
                    }
                    throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                            "bench %s from %s truncated: the connection ended after %d of %d bytes", what, peer, read, buffer.length));
                }
                read += got;
            }
            return true;
        }
        catch (SocketTimeoutException e) {
            throw timedOut(what);
        }
        catch (IOException e) {
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, "the control connection to the bench peer at " + peer + " failed: " + e.getMessage()
                    + " (did it stop?" + tlsHint() + ")", e);
        }
    }

    /**
     * What a connection an initiator's target closed or reset may mean: in TLS 1.3 a server checks
     * the client's certificate after the client's handshake is done, so a refused initiator learns of
     * it on its first exchange; a TLS target drops a plain initiator's first message, alert or not.
     */
    private String tlsHint()
    {
        if (!initiator) {
            return "";
        }
        return security.tls() ? " over TLS, a target with --tls-client-auth require closes the connection after the handshake when this initiator"
                + " shows no certificate its --tls-ca signed: give --tls-cert and --tls-key"
                : " a target started with --tls-cert closes a connection without TLS: give this initiator --tls-ca";
    }

    private KvBridgeException timedOut(String what)
    {
        return new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, "no bench " + what + " from " + peer
                + " before the deadline (is the peer stopped, or slower than --timeout allows?)");
    }

    /** {@return untrusted text as one bounded line, control characters blanked, for logs and errors} */
    static String bounded(String text)
    {
        String line = text == null ? "" : text.replaceAll("\\p{Cntrl}", " ");
        return line.length() <= MAX_ERROR_CHARS ? line : line.substring(0, MAX_ERROR_CHARS) + "...";
    }

    /** {@return an address as the options take it: {@code 127.0.0.1:5600}, {@code [::1]:5600}} */
    static String hostPort(InetSocketAddress address)
    {
        String host = address.getAddress() == null ? address.getHostString() : address.getAddress().getHostAddress();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + address.getPort();
    }

    private static String peerOf(Socket socket)
    {
        return socket.getRemoteSocketAddress() instanceof InetSocketAddress remote ? hostPort(remote) : String.valueOf(socket.getRemoteSocketAddress());
    }

    private static void closeQuietly(Socket socket)
    {
        try {
            socket.close();
        }
        catch (IOException e) {
            // nothing was connected
        }
    }

    @Override
    public void close()
    {
        closeQuietly(socket);
    }
}
