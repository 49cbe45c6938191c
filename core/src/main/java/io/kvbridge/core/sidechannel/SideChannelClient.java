package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.wire.AuthenticationCounters;
import io.kvbridge.core.wire.MessageAuthenticator;
import io.kvbridge.core.wire.MessageAuthenticator.Direction;
import io.kvbridge.core.wire.MessageAuthenticator.Opened;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLSocket;

/**
 * Fetches handshake payloads from a peer's side channel over one TCP connection, bounded by a
 * connect timeout, a timeout per read and a deadline for the whole exchange, and estimates the
 * peer's clock offset from each round trip. It returns the payload bytes unchecked: verifying them
 * is the {@link io.kvbridge.core.wire.HandshakeVerifier}'s job. With {@link SideChannelSettings#tls()}
 * the connection is TLS 1.3, its handshake bounded by the read timeout and the deadline.
 *
 * <p>Thread safe: each fetch uses its own connection.
 */
public final class SideChannelClient
{
    private static final byte[] NO_NONCE = new byte[0];
    private static final int CONNECT_ATTEMPTS = 8;

    private final SideChannelSettings settings;
    private final SideChannelClock clock;
    private final MessageAuthenticator authenticator;
    private final MessageAuthenticator plainReplies;

    /**
     * One rank's payload as fetched.
     *
     * @param rank the rank asked for.
     * @param payload the payload bytes, not yet verified.
     * @param clockSample the clock offset estimated from this request's round trip.
     * @param sessionNonce the server's notification session nonce when a session was asked for and
     *     opened, else null.
     */
    public record Fetched(RankKey rank, byte[] payload, ClockOffset clockSample, byte[] sessionNonce)
    {
    }

    /**
     * What a client asks for when it wants a notification session with every rank it fetches.
     *
     * @param agent the client rank's transport agent name, the sender of its notifications.
     * @param nonce the client's nonce for this handshake ({@link SessionKey#newNonce()}).
     */
    public record SessionRequest(String agent, byte[] nonce)
    {
        /** Validates the values. */
        public SessionRequest
        {
            requireNonNull(agent, "agent is null");
            requireNonNull(nonce, "nonce is null");
            KvBridgeException.checkArgument(!agent.isEmpty(), "agent is empty");
            KvBridgeException.checkArgument(nonce.length == SessionKey.NONCE_BYTES, "nonce.length=%d (expected: %d)", nonce.length,
                    SessionKey.NONCE_BYTES);
        }
    }

    /**
     * Creates a client.
     *
     * @param settings timeouts, limits and secret.
     * @param clock clocks for round trips and authentication.
     */
    public SideChannelClient(SideChannelSettings settings, SideChannelClock clock)
    {
        this.settings = requireNonNull(settings, "settings is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.authenticator = settings.newAuthenticator(clock);
        this.plainReplies = MessageAuthenticator.unauthenticated(settings.limits());
    }

    /** {@return how authentication of replies fared} */
    public AuthenticationCounters authentication()
    {
        return authenticator.counters();
    }

    /** {@return the settings} */
    public SideChannelSettings settings()
    {
        return settings;
    }

    /**
     * Fetches the payloads of some ranks of the engine at an address.
     *
     * @param address the peer's side channel.
     * @param ranks the ranks to fetch, in order.
     * @return one entry per rank, in the same order.
     * @throws KvBridgeException with {@link ErrorCode#DEADLINE_EXCEEDED} when a timeout or the
     *     deadline passes, {@link ErrorCode#PEER_UNKNOWN} when nothing listens at the address,
     *     {@link ErrorCode#HANDSHAKE_FAILED} when the peer closes the connection or answers with an
     *     error, {@link ErrorCode#PROTOCOL_ERROR} for a malformed reply,
     *     {@link ErrorCode#AUTHENTICATION_FAILED} for a reply that fails authentication.
     */
    public List<Fetched> fetch(InetSocketAddress address, List<RankKey> ranks)
    {
        return fetch(address, ranks, null);
    }

    /**
     * Like {@link #fetch(InetSocketAddress, List)}, asking each rank for a notification session.
     * Everything read is bounded by {@code maxHandshakeBytes} in total, whatever the peer sends.
     *
     * @param address the peer's side channel.
     * @param ranks the ranks to fetch, in order.
     * @param session the session to ask for, or null for none.
     * @return one entry per rank, in the same order.
     * @throws KvBridgeException as {@link #fetch(InetSocketAddress, List)}, and with
     *     {@link ErrorCode#PROTOCOL_ERROR} when the replies would exceed {@code maxHandshakeBytes}.
     */
    public List<Fetched> fetch(InetSocketAddress address, List<RankKey> ranks, SessionRequest session)
    {
        return fetch(address, ranks, null, session);
    }

    /**
     * Like {@link #fetch(InetSocketAddress, List, SessionRequest)}, asking for the ranks of one role:
     * an engine that runs both kinds serves a producer and a consumer under each rank.
     *
     * @param address the peer's side channel.
     * @param ranks the ranks to fetch, in order.
     * @param role the role of the ranks wanted; null to name none, as clients of earlier releases do.
     * @param session the session to ask for, or null for none.
     * @return one entry per rank, in the same order.
     * @throws KvBridgeException as {@link #fetch(InetSocketAddress, List, SessionRequest)}.
     */
    public List<Fetched> fetch(InetSocketAddress address, List<RankKey> ranks, ServedRole role, SessionRequest session)
    {
        requireNonNull(address, "address is null");
        requireNonNull(ranks, "ranks is null");
        KvBridgeException.checkArgument(!ranks.isEmpty(), "no ranks to fetch from %s", address);
        long deadline = System.nanoTime() + settings.handshakeTimeout().toNanos();
        for (int attempt = 1; ; attempt++) {
            try {
                return fetchOnce(address, ranks, role, session, deadline);
            }
            catch (Unanswered e) {
                // a server under a connection flood closes connections it has not served yet (newest first
                // served): a fresh connection is, so the handshake tries again while its deadline allows
                if (attempt >= CONNECT_ATTEMPTS || deadline - System.nanoTime() <= 0) {
                    throw e.failure;
                }
                // a little later each time, so that retries do not join the flood
                java.util.concurrent.locks.LockSupport.parkNanos(Math.min(deadline - System.nanoTime(), attempt * 5_000_000L));
            }
        }
    }

    /** The server closed the connection before it answered anything: worth one more connection. */
    private static final class Unanswered
            extends RuntimeException
    {
        final KvBridgeException failure;

        Unanswered(KvBridgeException failure)
        {
            super(null, null, false, false);
            this.failure = failure;
        }
    }

    private List<Fetched> fetchOnce(InetSocketAddress address, List<RankKey> ranks, ServedRole role, SessionRequest session, long deadline)
    {
        Budget budget = new Budget(settings.maxHandshakeBytes());
        try (Socket socket = new Socket()) {
            connect(socket, address, deadline);
            socket.setTcpNoDelay(true);
            Socket channel = settings.tls() == null ? socket : startTls(socket, address, deadline);
            try (channel) {
                DeadlineInputStream timed = new DeadlineInputStream(channel, settings.readTimeout().toMillis(), deadline);
                InputStream in = new BufferedInputStream(timed);
                OutputStream out = new BufferedOutputStream(channel.getOutputStream());
                List<Fetched> fetched = new ArrayList<>(ranks.size());
                for (RankKey rank : ranks) {
                    try {
                        fetched.add(fetchOne(address, rank, role, session, budget, in, out));
                    }
                    catch (SocketTimeoutException e) {
                        throw timedOut(address, rank, timed.deadlinePassed());
                    }
                }
                return fetched;
            }
        }
        catch (SSLException e) {
            KvBridgeException failure = failed(address, e);
            // a server under a flood may close a connection mid-handshake, as it closes plain ones before their first request
            throw budget.replies == 0 && closedDuringHandshake(e) ? new Unanswered(failure) : failure;
        }
        catch (IOException e) {
            // in TLS 1.3 the server checks a client's certificate after the client finished its handshake: a refusal
            // then reaches the client as a closed connection on its first write or read, not as an SSLException
            String tls = settings.tls() == null ? "" : " over TLS (a server that requires client certificates closes the connection"
                    + " after the handshake when this engine presents none it trusts: check the server's client_auth and this engine's"
                    + " cert_file/key_file or keystore_file)";
            KvBridgeException failure = new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT, "side channel at %s failed%s: %s",
                    address, tls, e), e);
            throw budget.replies == 0 ? new Unanswered(failure) : failure;
        }
    }

    /** Runs the TLS handshake over a connected socket, within the read timeout and the handshake's deadline. */
    private SSLSocket startTls(Socket socket, InetSocketAddress address, long deadline)
            throws IOException
    {
        SSLSocket tls = settings.tls().overClient(socket, address);
        try {
            SideChannelTls.handshake(tls, Math.min(deadline, System.nanoTime() + settings.readTimeout().toNanos()));
            return tls;
        }
        catch (SocketTimeoutException e) {
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, String.format(Locale.ROOT,
                    "the TLS handshake with the side channel at %s did not finish within readTimeout=%s or handshakeTimeout=%s (is the peer"
                            + " overloaded, or is this port not a TLS side channel?)", address, settings.readTimeout(), settings.handshakeTimeout()), e);
        }
    }

    private void connect(Socket socket, InetSocketAddress address, long deadline)
            throws IOException
    {
        long timeoutMillis = Math.max(1, Math.min(settings.connectTimeout().toMillis(), (deadline - System.nanoTime()) / 1_000_000));
        try {
            socket.connect(address, (int) Math.min(Integer.MAX_VALUE, timeoutMillis));
        }
        catch (SocketTimeoutException e) {
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, String.format(Locale.ROOT,
                    "cannot connect to the side channel at %s within %d ms (connectTimeout=%s): is the host reachable and the port open?",
                    address, timeoutMillis, settings.connectTimeout()), e);
        }
        catch (ConnectException e) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, String.format(Locale.ROOT,
                    "cannot connect to the side channel at %s: %s (is the peer engine running, and is this its side channel port?)",
                    address, e.getMessage()), e);
        }
    }

    /** What one handshake has read so far, against {@code maxHandshakeBytes}. */
    private static final class Budget
    {
        final long max;
        long read;
        int replies;

        Budget(long max)
        {
            this.max = max;
        }
    }

    private Fetched fetchOne(InetSocketAddress address, RankKey rank, ServedRole role, SessionRequest session, Budget budget, InputStream in,
            OutputStream out)
            throws IOException
    {
        byte[] content = session == null ? SideChannelMessages.request(rank, role, null, null)
                : SideChannelMessages.request(rank, role, session.agent(), session.nonce());
        Opened request = authenticator.seal(Direction.REQUEST, content, NO_NONCE);
        long sendNanos = clock.monotonicNanos();
        Frames.write(out, request.content());
        byte[] frame = readReply(address, rank, budget, in);
        long receiveNanos = clock.monotonicNanos();
        if (frame == null) {
            KvBridgeException failure = new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                    "the side channel at %s closed the connection without answering the request for rank %s%s", address, rank,
                    settings.tls() == null ? " (if the peer serves TLS, configure tls on this engine too)" : ""));
            throw budget.replies == 0 ? new Unanswered(failure) : failure;
        }
        SideChannelMessages.Reply reply = SideChannelMessages.decodeReply(openReply(address, frame, request.nonce()), settings.limits());
        if (!reply.ok()) {
            // a refusal for authentication keeps its code so callers can tell a secret mismatch from other failures
            ErrorCode code = ErrorCode.AUTHENTICATION_FAILED.id().equals(reply.errorCode()) ? ErrorCode.AUTHENTICATION_FAILED : ErrorCode.HANDSHAKE_FAILED;
            throw new KvBridgeException(code, String.format(Locale.ROOT,
                    "the side channel at %s refused the request for rank %s: %s", address, rank, reply.errorMessage()));
        }
        if (session != null && reply.sessionNonce() == null) {
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                    "the side channel at %s opened no notification session for rank %s (the rank takes no notifications, or the peer runs an"
                            + " older kvbridge release: run the same release on both engines)", address, rank));
        }
        return new Fetched(rank, reply.payload(), ClockOffset.sample(sendNanos, reply.clockNanos(), Math.max(sendNanos, receiveNanos)),
                session == null ? null : reply.sessionNonce());
    }

    /** Reads one reply within both the frame limit and what is left of the handshake's total. */
    private byte[] readReply(InetSocketAddress address, RankKey rank, Budget budget, InputStream in)
            throws IOException
    {
        long length = Frames.readLength(in, "reply");
        if (length < 0) {
            return null;
        }
        if (settings.tls() == null && SideChannelTls.looksLikeTlsRecord(length)) {
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                    "the side channel at %s answered with TLS, but this engine connects without it: configure tls on this engine too (at least"
                            + " tls.ca_file, the CA that signed the peer's certificate)", address));
        }
        int maxFrame = settings.limits().maxFrameBytes();
        if (length > maxFrame) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "reply frame length=%d exceeds the limit of %d bytes (maxFrameBytes); refused without reading it (is the side channel at %s"
                            + " speaking this protocol? it answered the request for rank %s)", length, maxFrame, address, rank));
        }
        if (length > budget.max - budget.read) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "the handshake with the side channel at %s would read more than maxHandshakeBytes=%d: %d bytes in %d replies so far, and the"
                            + " reply for rank %s announces length=%d; refused without reading it (raise maxHandshakeBytes if the peer's ranks"
                            + " really advertise this much)", address, budget.max, budget.read, budget.replies, rank, length));
        }
        budget.read += Frames.HEADER_BYTES + length;
        budget.replies++;
        return Frames.readBody(in, length, "reply");
    }

    private byte[] openReply(InetSocketAddress address, byte[] frame, byte[] requestNonce)
    {
        try {
            return authenticator.open(Direction.REPLY, frame, requestNonce).content();
        }
        catch (KvBridgeException e) {
            if (e.code() != ErrorCode.AUTHENTICATION_FAILED) {
                throw e;
            }
            // a server that could not authenticate our request answers without a MAC: its reason is
            // worth showing, but nothing else in such a reply is trusted
            SideChannelMessages.Reply refusal = unauthenticatedRefusal(frame);
            if (refusal == null) {
                throw e;
            }
            throw new KvBridgeException(ErrorCode.AUTHENTICATION_FAILED, String.format(Locale.ROOT,
                    "the side channel at %s refused our request (unauthenticated reply): %s", address, refusal.errorMessage()), e);
        }
    }

    private SideChannelMessages.Reply unauthenticatedRefusal(byte[] frame)
    {
        try {
            SideChannelMessages.Reply reply = SideChannelMessages.decodeReply(plainReplies.open(Direction.REPLY, frame, NO_NONCE).content(),
                    settings.limits());
            return reply.ok() ? null : reply;
        }
        catch (KvBridgeException ignored) {
            return null;
        }
    }

    private KvBridgeException timedOut(InetSocketAddress address, RankKey rank, boolean deadlinePassed)
    {
        if (deadlinePassed) {
            return new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, String.format(Locale.ROOT,
                    "the handshake with the side channel at %s ran past handshakeTimeout=%s while waiting for rank %s",
                    address, settings.handshakeTimeout(), rank));
        }
        return new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, String.format(Locale.ROOT,
                "no reply from the side channel at %s within readTimeout=%s for rank %s: the peer accepted the connection but did not answer"
                        + " (is this port a kvbridge side channel, and is the peer overloaded?)",
                address, settings.readTimeout(), rank));
    }

    /**
     * Tells whether a TLS failure may be the server closing a connection it had not served yet
     * (as it does under a connection flood), which a new connection can get past.
     */
    private static boolean closedDuringHandshake(SSLException e)
    {
        return e instanceof SSLHandshakeException && e.getCause() instanceof EOFException;
    }

    /** Explains a TLS failure against a peer's side channel. */
    private static KvBridgeException failed(InetSocketAddress address, SSLException e)
    {
        return new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                "the TLS handshake with the side channel at %s failed: %s (does the peer serve TLS? is its certificate signed by the configured"
                        + " CA and issued for %s? does it require a client certificate this engine lacks?)", address, e.getMessage(),
                address.getHostString()), e);
    }
}
