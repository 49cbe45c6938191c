package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.sidechannel.ServedRanks.Served;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.wire.AuthenticationCounters;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.MessageAuthenticator;
import io.kvbridge.core.wire.MessageAuthenticator.Direction;
import io.kvbridge.core.wire.MessageAuthenticator.Opened;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One engine's side channel: a TCP server that serves each of the engine's ranks' handshake
 * payload under its {@code (ppRank, tpRank)}. Payloads are encoded once at start. One platform
 * thread accepts; each connection is served on its own virtual thread. Which connections are held
 * is the {@link Admission}'s choice: a new connection must send a valid first request within
 * {@code firstRequestTimeout} and until then can be displaced by newer ones (at most
 * {@code maxPendingConnections}, {@code maxPendingPerAddress} per source address of another host); an established
 * one is never displaced by those, at most {@code maxConnections} are served at once, each closed
 * after {@code idleConnectionTimeout} of silence. The accept thread takes a connection only while
 * fewer sockets are open than those bounds and as many again being closed ({@link OpenSockets}).
 * Refusals are logged as one summary line per interval.
 *
 * <p>A request that names the client's transport agent and a nonce opens a notification session
 * with the rank asked for: the rank's session sink receives the derived {@link SessionKey} before
 * the reply carrying the server's nonce leaves.
 *
 * <p>With {@link SideChannelSettings#tls()} the server socket speaks TLS 1.3 only, and a new
 * connection's TLS handshake counts toward its {@code firstRequestTimeout}.
 *
 * <p>A client that sends anything malformed gets an error reply (where a reply is possible) and
 * its connection is closed; nothing it sends reaches other connections, which go on being served.
 */
public final class SideChannelServer implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(SideChannelServer.class);

    // requests are a few dozen bytes: a larger frame is refused before it costs memory
    static final int MAX_REQUEST_BYTES = 64 << 10;
    // a handshake asks once per rank; no engine has this many ranks
    private static final int MAX_REQUESTS_PER_CONNECTION = 256;
    private static final int MAX_ERROR_MESSAGE_CHARS = 1_024;
    private static final long DRAIN_NANOS = 200_000_000L;
    private static final long ACCEPT_RETRY_MILLIS = 50;
    private static final byte[] NO_NONCE = new byte[0];
    private static final Duration LOG_INTERVAL = Duration.ofSeconds(10);
    // the kernel queues connections the accept thread has not taken yet: room for a flood's burst, since
    // a full queue drops a client's SYN and costs it a one-second retransmission (Linux caps it at somaxconn)
    private static final int MIN_BACKLOG = 4_096;

    private final String engineId;
    private final ServedRanks payloads;
    private final SideChannelSettings settings;
    private final SideChannelClock clock;
    private final MessageAuthenticator authenticator;
    private final MessageAuthenticator plainReplies;
    private final byte[] secret;
    private final ServerSocket serverSocket;
    private final Admission admission;
    private final OpenSockets openSockets;
    private final LogSummary refusals;
    private final Thread acceptThread;
    private final AtomicBoolean closed = new AtomicBoolean();

    private final AtomicLong connectionsAccepted = new AtomicLong();
    private final AtomicLong connectionsRefused = new AtomicLong();
    private final AtomicLong connectionsDisplaced = new AtomicLong();
    private final AtomicLong requestsServed = new AtomicLong();
    private final AtomicLong requestsRejected = new AtomicLong();
    private final AtomicLong sessionsOpened = new AtomicLong();

    private SideChannelServer(String engineId, ServedRanks payloads, SideChannelSettings settings, SideChannelClock clock,
            ServerSocket serverSocket)
    {
        this.engineId = engineId;
        this.payloads = payloads;
        this.settings = settings;
        this.clock = clock;
        this.authenticator = settings.newAuthenticator(clock);
        this.plainReplies = MessageAuthenticator.unauthenticated(settings.limits());
        this.secret = settings.secret();
        this.serverSocket = serverSocket;
        this.admission = new Admission(settings.maxPendingConnections(), settings.maxPendingPerAddress(), settings.maxConnections());
        // room for as many displaced connections being closed as may be pending
        this.openSockets = new OpenSockets(2 * settings.maxPendingConnections() + settings.maxConnections());
        this.refusals = new LogSummary(LOG, "side channel of engine " + engineId + " on port " + serverSocket.getLocalPort()
                + ": connections refused or requests rejected", LOG_INTERVAL);
        this.acceptThread = Thread.ofPlatform().daemon().name("kvbridge-side-channel-" + serverSocket.getLocalPort()).unstarted(this::acceptLoop);
    }

    /**
     * Starts serving an engine's ranks.
     *
     * @param engineId the engine's id; every rank's metadata must carry it.
     * @param ranks the metadata of each rank the engine serves, one per {@code (ppRank, tpRank)}.
     * @param settings where to listen and how to authenticate.
     * @param clock clocks for replies and authentication.
     * @return the running server.
     * @throws KvBridgeException with {@link ErrorCode#INVALID_ARGUMENT} when a rank carries another
     *     engine id, a rank is given twice, or a payload exceeds the limits peers enforce;
     *     {@link ErrorCode#CONFIG_INVALID} when the address cannot be bound.
     */
    public static SideChannelServer start(String engineId, List<RankMetadata> ranks, SideChannelSettings settings, SideChannelClock clock)
    {
        requireNonNull(engineId, "engineId is null");
        requireNonNull(ranks, "ranks is null");
        requireNonNull(settings, "settings is null");
        requireNonNull(clock, "clock is null");
        KvBridgeException.checkArgument(!ranks.isEmpty(), "engine %s serves no ranks (expected: the metadata of at least one rank)", engineId);
        ServedRanks payloads = new ServedRanks();
        for (RankMetadata rank : ranks) {
            Served previous = payloads.put(null, RankKey.of(rank.rank()), new Served(ServedRanks.encode(engineId, rank, settings), null));
            KvBridgeException.checkArgument(previous == null, "rank %s is given twice", RankKey.of(rank.rank()));
        }
        return start(engineId, payloads, settings, clock);
    }

    /**
     * Starts serving an engine whose ranks are added later with {@link #publish}, as the ranks of
     * one process come up one by one. Until a rank is published, requests for it get an error reply.
     *
     * @param engineId the engine's id; every published rank must carry it.
     * @param settings where to listen and how to authenticate.
     * @param clock clocks for replies and authentication.
     * @return the running server.
     * @throws KvBridgeException with {@link ErrorCode#CONFIG_INVALID} when the address cannot be bound.
     */
    public static SideChannelServer startEmpty(String engineId, SideChannelSettings settings, SideChannelClock clock)
    {
        requireNonNull(engineId, "engineId is null");
        requireNonNull(settings, "settings is null");
        requireNonNull(clock, "clock is null");
        return start(engineId, new ServedRanks(), settings, clock);
    }

    /**
     * Serves one more rank, or replaces the metadata of a rank already served.
     *
     * @param rank the rank's metadata; it must carry the server's engine id.
     * @throws KvBridgeException with {@link ErrorCode#INVALID_ARGUMENT} when the engine id differs or
     *     the payload exceeds the limits peers enforce.
     */
    public void publish(RankMetadata rank)
    {
        publish(rank, null);
    }

    /**
     * Like {@link #publish(RankMetadata)}, for a rank that takes notifications: each client that asks
     * for a notification session with it hands its key to the sink (on the connection's thread)
     * before the reply leaves.
     *
     * @param rank the rank's metadata; it must carry the server's engine id.
     * @param sessions receives each session's key; null for a rank that opens none.
     */
    public void publish(RankMetadata rank, Consumer<SessionKey> sessions)
    {
        publish(rank, null, sessions);
    }

    /**
     * Like {@link #publish(RankMetadata, Consumer)}, for one role of the rank: an engine that runs a
     * producer and a consumer of one rank serves each under its role, and a request names the role it wants.
     *
     * @param rank the rank's metadata; it must carry the server's engine id.
     * @param role the connector's role; null for an entry that answers either.
     * @param sessions receives each session's key; null for a rank that opens none.
     */
    public void publish(RankMetadata rank, ServedRole role, Consumer<SessionKey> sessions)
    {
        requireNonNull(rank, "rank is null");
        payloads.put(role, RankKey.of(rank.rank()), new Served(ServedRanks.encode(engineId, rank, settings), sessions));
        LOG.debug("side channel of engine {} serves {}rank {}", engineId, role == null ? "" : role.wireName() + " ", RankKey.of(rank.rank()));
    }

    /**
     * Stops serving one role of a rank (later requests for it get an error reply); the other role, if served, stays.
     *
     * @param role the role it was published under, or null.
     * @param rank the rank's key.
     */
    public void withdraw(ServedRole role, RankKey rank)
    {
        payloads.remove(role, rank);
    }

    /** {@return the ranks served now, under any role} */
    public Set<RankKey> ranks()
    {
        return payloads.ranks();
    }

    /** {@return the roles a rank is published under; empty when it is served under no role, or not at all} */
    public Set<ServedRole> roles(RankKey rank)
    {
        return payloads.roles(rank);
    }

    private static SideChannelServer start(String engineId, ServedRanks payloads, SideChannelSettings settings, SideChannelClock clock)
    {
        ServerSocket serverSocket;
        try {
            serverSocket = settings.tls() == null ? new ServerSocket() : settings.tls().newServerSocket(engineId);
            serverSocket.setReuseAddress(true);
            serverSocket.bind(new InetSocketAddress(settings.bindAddress(), settings.port()),
                    Math.max(MIN_BACKLOG, settings.maxConnections() + settings.maxPendingConnections()));
        }
        catch (IOException e) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT,
                    "cannot bind the side channel of engine %s to %s:%d: %s (choose a free port, or 0 for any)",
                    engineId, settings.bindAddress().getHostAddress(), settings.port(), e.getMessage()), e);
        }
        SideChannelServer server = new SideChannelServer(engineId, payloads, settings, clock, serverSocket);
        if (!settings.authenticatesPeers() && settings.bindAddress().isLoopbackAddress()) {
            LOG.info("side channel of engine {} on {} is unauthenticated: only processes on this host reach it, and any of them can read the"
                    + " engine's cache geometry and send it requests", engineId, server.address());
        }
        else if (!settings.authenticatesPeers()) {
            LOG.warn("side channel of engine {} on {} is unauthenticated: any process that reaches this port can read the engine's cache geometry"
                    + " and send it requests; configure a shared secret on all engines to authenticate every message", engineId, server.address());
        }
        server.acceptThread.start();
        LOG.info("side channel of engine {} serving ranks {} on {}", engineId, server.payloads.describe(), server.address());
        return server;
    }

    /** {@return the address the server listens on} */
    public InetSocketAddress address()
    {
        return new InetSocketAddress(serverSocket.getInetAddress(), serverSocket.getLocalPort());
    }

    /** {@return the engine this server serves} */
    public String engineId()
    {
        return engineId;
    }

    /** {@return connections accepted, whether or not they were then served} */
    public long connectionsAccepted()
    {
        return connectionsAccepted.get();
    }

    /** {@return connections closed after a valid first request because {@code maxConnections} were busy being served} */
    public long connectionsRefused()
    {
        return connectionsRefused.get();
    }

    /**
     * {@return connections closed before they sent a valid first request} Such a connection was
     * displaced by a newer one or silent past {@code firstRequestTimeout}; the count also holds idle
     * established connections displaced by newly established ones.
     */
    public long connectionsDisplaced()
    {
        return connectionsDisplaced.get();
    }

    /** {@return notification sessions opened (handed to a rank's sink)} */
    public long sessionsOpened()
    {
        return sessionsOpened.get();
    }

    /** {@return connections held now that have not sent a valid first request} */
    public int pendingConnections()
    {
        return admission.pendingCount();
    }

    /** {@return connections held now that sent a valid first request} */
    public int establishedConnections()
    {
        return admission.establishedCount();
    }

    /** {@return established connections waiting for their next request} */
    public int idleConnections()
    {
        return admission.idleCount();
    }

    /** {@return requests answered with a payload} */
    public long requestsServed()
    {
        return requestsServed.get();
    }

    /** {@return requests refused as malformed, unauthenticated or for an unknown rank} */
    public long requestsRejected()
    {
        return requestsRejected.get();
    }

    /** {@return how authentication of requests fared} */
    public AuthenticationCounters authentication()
    {
        return authenticator.counters();
    }

    private void acceptLoop()
    {
        while (!closed.get()) {
            Socket socket;
            try {
                if (!openSockets.acquire(closed::get)) {
                    continue;
                }
                socket = serverSocket.accept();
            }
            catch (InterruptedException e) {
                return;
            }
            catch (IOException e) {
                openSockets.release();
                if (!closed.get()) {
                    refusals.record("accept failures", e.toString());
                    // e.g. out of file descriptors: pause instead of spinning on the same failure
                    pauseAfterAcceptFailure();
                }
                continue;
            }
            connectionsAccepted.incrementAndGet();
            Admission.Connection connection = new Admission.Connection(socket);
            for (Admission.Connection displaced : admission.admit(connection)) {
                connectionsDisplaced.incrementAndGet();
                refusals.record("displaced before a first request", "from " + displaced.address.getHostAddress());
                // closing wakes the connection's reader, which takes a while: not on the thread that accepts
                Thread.ofVirtual().name("kvbridge-side-channel-close").start(() -> closeQuietly(displaced.socket));
            }
            try {
                Thread.ofVirtual().name("kvbridge-side-channel-connection").start(() -> {
                    try {
                        serve(connection);
                    }
                    finally {
                        admission.closed(connection);
                        closeQuietly(socket);
                        openSockets.release();
                    }
                });
            }
            catch (RuntimeException | OutOfMemoryError e) {
                admission.closed(connection);
                closeQuietly(socket);
                openSockets.release();
                refusals.record("accept failures", e.toString());
            }
        }
    }

    private static void pauseAfterAcceptFailure()
    {
        try {
            Thread.sleep(ACCEPT_RETRY_MILLIS);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void serve(Admission.Connection connection)
    {
        Socket socket = connection.socket;
        try {
            socket.setTcpNoDelay(true);
            // a new connection has a short deadline for its whole first request: holding a socket open costs the attacker nothing
            long firstNanos = settings.firstRequestTimeout().toNanos();
            long idleNanos = settings.idleConnectionTimeout().toNanos();
            long firstDeadline = System.nanoTime() + firstNanos;
            if (socket instanceof SSLSocket tls) {
                // the TLS handshake is part of the first request: it shares its deadline
                SideChannelTls.handshake(tls, firstDeadline);
            }
            DeadlineInputStream timed = new DeadlineInputStream(socket, settings.idleConnectionTimeout().toMillis(), firstDeadline);
            InputStream in = new BufferedInputStream(timed);
            OutputStream out = new BufferedOutputStream(socket.getOutputStream());
            byte[] serverNonce = null;
            for (int served = 0; served < MAX_REQUESTS_PER_CONNECTION && !closed.get(); served++) {
                if (served > 0) {
                    // the whole next request must arrive within the idle timeout: dripping bytes does not extend it
                    timed.deadline(System.nanoTime() + idleNanos);
                    admission.idle(connection);
                }
                byte[] frame;
                try {
                    frame = Frames.read(in, MAX_REQUEST_BYTES, "request");
                }
                catch (KvBridgeException e) {
                    reject(timed, out, socket, e);
                    return;
                }
                if (frame == null) {
                    return;
                }
                if (served == 0) {
                    admission.requestRead(connection);
                }
                Opened opened;
                SideChannelMessages.Request request;
                try {
                    opened = authenticator.open(Direction.REQUEST, frame, NO_NONCE);
                    request = SideChannelMessages.decodeRequest(opened.content(), settings.limits());
                }
                catch (KvBridgeException e) {
                    reject(timed, out, socket, e);
                    return;
                }
                if (served == 0 && !established(connection, out, opened)) {
                    return;
                }
                admission.busy(connection);
                if (request.agent() != null && serverNonce == null) {
                    serverNonce = SessionKey.newNonce();
                }
                answer(request, opened, serverNonce, out);
            }
        }
        catch (SocketTimeoutException e) {
            if (admission.pending(connection)) {
                connectionsDisplaced.incrementAndGet();
                refusals.record("closed without a whole first request within firstRequestTimeout", "from " + connection.address.getHostAddress());
            }
            else {
                LOG.debug("side channel of engine {}: closed a connection from {} that sent no whole request within {}", engineId,
                        socket.getRemoteSocketAddress(), settings.idleConnectionTimeout());
            }
        }
        catch (SSLException e) {
            refusals.record("TLS handshakes or records failed", "from " + connection.address.getHostAddress() + ": " + e.getMessage());
        }
        catch (SocketException e) {
            LOG.debug("side channel of engine {}: connection from {} ended: {}", engineId, socket.getRemoteSocketAddress(), e.toString());
        }
        catch (IOException e) {
            LOG.debug("side channel of engine {}: connection from {} failed: {}", engineId, socket.getRemoteSocketAddress(), e.toString());
        }
    }

    /** Moves a connection whose first request was valid to the established pool; returns false when it was refused or displaced. */
    private boolean established(Admission.Connection connection, OutputStream out, Opened request)
            throws IOException
    {
        Admission.Promotion promotion = admission.promote(connection);
        if (promotion.displaced() != null) {
            connectionsDisplaced.incrementAndGet();
            refusals.record("idle established displaced", "from " + promotion.displaced().address.getHostAddress());
            closeQuietly(promotion.displaced().socket);
        }
        if (promotion.admitted()) {
            return true;
        }
        if (promotion.refused()) {
            connectionsRefused.incrementAndGet();
            refusals.record("refused: every connection busy", "maxConnections=" + settings.maxConnections() + ", from "
                    + connection.address.getHostAddress());
            send(out, SideChannelMessages.errorReply(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                    "engine %s's side channel is serving maxConnections=%d busy connections; retry shortly", engineId, settings.maxConnections())),
                    request.nonce());
        }
        return false;
    }

    /** Answers one valid request. */
    private void answer(SideChannelMessages.Request request, Opened opened, byte[] serverNonce, OutputStream out)
            throws IOException
    {
        RankKey rank = request.rank();
        Served served = payloads.find(request.role(), rank);
        if (served == null) {
            requestsRejected.incrementAndGet();
            String message = payloads.missing(engineId, request.role(), rank);
            send(out, SideChannelMessages.errorReply(ErrorCode.PEER_UNKNOWN, message), opened.nonce());
            return;
        }
        byte[] sessionNonce = null;
        if (request.agent() != null && served.sessions() != null) {
            // the rank learns the session before the client can use it: the reply leaves only after this
            served.sessions().accept(SessionKey.derive(secret, request.sessionNonce(), serverNonce, request.agent(), engineId, rank.ppRank(),
                    rank.tpRank()));
            sessionsOpened.incrementAndGet();
            sessionNonce = serverNonce;
        }
        // counted before the reply leaves, so that a client holding the reply sees the count
        requestsServed.incrementAndGet();
        send(out, SideChannelMessages.okReply(served.payload(), clock.monotonicNanos(), sessionNonce), opened.nonce());
    }

    private void reject(DeadlineInputStream in, OutputStream out, Socket socket, KvBridgeException e)
            throws IOException
    {
        requestsRejected.incrementAndGet();
        refusals.record("requests rejected", "from " + socket.getRemoteSocketAddress() + ": " + e.getMessage());
        String message = e.getMessage().length() <= MAX_ERROR_MESSAGE_CHARS ? e.getMessage() : e.getMessage().substring(0, MAX_ERROR_MESSAGE_CHARS);
        // the request could not be authenticated, so the reply cannot answer a trusted nonce: it is sent
        // without a MAC and only ever read by the client as a reason for failing
        Frames.write(out, plainReplies.seal(Direction.REPLY, SideChannelMessages.errorReply(e.code(), message), NO_NONCE).content());
        // closing with unread input would reset the connection and could destroy the reply in flight:
        // end our side, then discard a bounded amount of what the client still sends
        socket.shutdownOutput();
        in.deadline(System.nanoTime() + DRAIN_NANOS);
        try {
            byte[] discard = new byte[4096];
            long drained = 0;
            for (int read = 0; read >= 0 && drained < MAX_REQUEST_BYTES; read = in.read(discard, 0, discard.length)) {
                drained += read;
            }
        }
        catch (SocketTimeoutException ignored) {
            // the client keeps the connection open: it is closed now anyway
        }
    }

    private void send(OutputStream out, byte[] reply, byte[] inReplyTo)
            throws IOException
    {
        Frames.write(out, authenticator.seal(Direction.REPLY, reply, inReplyTo).content());
    }

    private static void closeQuietly(Socket socket)
    {
        try {
            socket.close();
        }
        catch (IOException e) {
            LOG.debug("closing a side channel connection failed: {}", e.toString());
        }
    }

    /** Stops accepting, closes every connection, and waits briefly for the accept thread. */
    @Override
    public void close()
    {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            serverSocket.close();
        }
        catch (IOException e) {
            LOG.debug("closing the side channel socket failed: {}", e.toString());
        }
        for (Admission.Connection connection : admission.all()) {
            closeQuietly(connection.socket);
        }
        try {
            acceptThread.join(1_000);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
