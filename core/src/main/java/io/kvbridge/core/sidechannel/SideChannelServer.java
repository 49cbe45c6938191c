package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.wire.AuthenticationCounters;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.MessageAuthenticator;
import io.kvbridge.core.wire.MessageAuthenticator.Direction;
import io.kvbridge.core.wire.MessageAuthenticator.Opened;
import io.kvbridge.core.wire.MetadataCodec;
import io.kvbridge.core.wire.RankMetadata;
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
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One engine's side channel: a TCP server that serves each of the engine's ranks' handshake
 * payload under its {@code (ppRank, tpRank)}. Payloads are encoded once at start. One platform
 * thread accepts; each connection is served on its own virtual thread, at most
 * {@code maxConnections} at once, each closed after {@code idleConnectionTimeout} of silence.
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
    private static final Comparator<RankKey> RANK_ORDER = Comparator.comparingInt(RankKey::ppRank).thenComparingInt(RankKey::tpRank);

    private final String engineId;
    private final Map<RankKey, byte[]> payloads;
    private final SideChannelSettings settings;
    private final SideChannelClock clock;
    private final MessageAuthenticator authenticator;
    private final MessageAuthenticator plainReplies;
    private final ServerSocket serverSocket;
    private final Semaphore connectionPermits;
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final Thread acceptThread;
    private final AtomicBoolean closed = new AtomicBoolean();

    private final AtomicLong connectionsAccepted = new AtomicLong();
    private final AtomicLong connectionsRefused = new AtomicLong();
    private final AtomicLong requestsServed = new AtomicLong();
    private final AtomicLong requestsRejected = new AtomicLong();

    private SideChannelServer(String engineId, Map<RankKey, byte[]> payloads, SideChannelSettings settings, SideChannelClock clock,
            ServerSocket serverSocket)
    {
        this.engineId = engineId;
        this.payloads = payloads;
        this.settings = settings;
        this.clock = clock;
        this.authenticator = settings.newAuthenticator(clock);
        this.plainReplies = MessageAuthenticator.unauthenticated(settings.limits());
        this.serverSocket = serverSocket;
        this.connectionPermits = new Semaphore(settings.maxConnections());
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
        Map<RankKey, byte[]> payloads = new TreeMap<>(RANK_ORDER);
        for (RankMetadata rank : ranks) {
            byte[] previous = payloads.put(RankKey.of(rank.rank()), encodeChecked(engineId, rank, settings));
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
        return start(engineId, Map.of(), settings, clock);
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
        requireNonNull(rank, "rank is null");
        payloads.put(RankKey.of(rank.rank()), encodeChecked(engineId, rank, settings));
        LOG.debug("side channel of engine {} serves rank {}", engineId, RankKey.of(rank.rank()));
    }

    /**
     * Stops serving a rank; later requests for it get an error reply.
     *
     * @param rank the rank's key.
     */
    public void withdraw(RankKey rank)
    {
        payloads.remove(requireNonNull(rank, "rank is null"));
    }

    /** {@return the ranks served now} */
    public Set<RankKey> ranks()
    {
        return Set.copyOf(payloads.keySet());
    }

    private static byte[] encodeChecked(String engineId, RankMetadata rank, SideChannelSettings settings)
    {
        KvBridgeException.checkArgument(rank.engineId().equals(engineId), "rank %s carries engineId=%s but the server serves engine %s",
                rank.rank(), rank.engineId(), engineId);
        byte[] payload = HandshakePayload.of(rank).encode();
        checkWithinLimits(rank, payload, settings);
        return payload;
    }

    private static SideChannelServer start(String engineId, Map<RankKey, byte[]> payloads, SideChannelSettings settings, SideChannelClock clock)
    {
        ServerSocket serverSocket;
        try {
            serverSocket = new ServerSocket();
            serverSocket.setReuseAddress(true);
            serverSocket.bind(new InetSocketAddress(settings.bindAddress(), settings.port()), settings.maxConnections());
        }
        catch (IOException e) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT,
                    "cannot bind the side channel of engine %s to %s:%d: %s (choose a free port, or 0 for any)",
                    engineId, settings.bindAddress().getHostAddress(), settings.port(), e.getMessage()), e);
        }
        SideChannelServer server = new SideChannelServer(engineId, new ConcurrentHashMap<>(payloads), settings, clock, serverSocket);
        if (!server.authenticator.authenticated()) {
            LOG.warn("side channel of engine {} on {} is unauthenticated: any process that reaches this port can read the engine's cache geometry"
                    + " and send it requests; configure a shared secret on all engines to authenticate every message", engineId, server.address());
        }
        server.acceptThread.start();
        LOG.info("side channel of engine {} serving ranks {} on {}", engineId, server.payloadKeys(), server.address());
        return server;
    }

    private static void checkWithinLimits(RankMetadata rank, byte[] payload, SideChannelSettings settings)
    {
        // peers decode with the same limits: refuse here, at start, what every peer would refuse later
        try {
            MetadataCodec.decode(HandshakePayload.decode(payload, settings.limits()).metadata(), settings.limits());
        }
        catch (KvBridgeException e) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "the metadata of rank " + rank.rank() + " would be refused by peers: "
                    + e.getMessage() + " (raise the wire limits on all engines, or advertise fewer regions)", e);
        }
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

    /** {@return connections accepted and served} */
    public long connectionsAccepted()
    {
        return connectionsAccepted.get();
    }

    /** {@return connections closed at once because {@code maxConnections} were being served} */
    public long connectionsRefused()
    {
        return connectionsRefused.get();
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
                socket = serverSocket.accept();
            }
            catch (IOException e) {
                if (!closed.get()) {
                    LOG.warn("side channel of engine {}: accept failed: {}", engineId, e.toString());
                    // e.g. out of file descriptors: pause instead of spinning on the same failure
                    pauseAfterAcceptFailure();
                }
                continue;
            }
            if (!connectionPermits.tryAcquire()) {
                connectionsRefused.incrementAndGet();
                LOG.warn("side channel of engine {}: refused a connection from {}: maxConnections={} are being served",
                        engineId, socket.getRemoteSocketAddress(), settings.maxConnections());
                closeQuietly(socket);
                continue;
            }
            connectionsAccepted.incrementAndGet();
            connections.add(socket);
            Thread.ofVirtual().name("kvbridge-side-channel-connection").start(() -> {
                try {
                    serve(socket);
                }
                finally {
                    connections.remove(socket);
                    closeQuietly(socket);
                    connectionPermits.release();
                }
            });
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

    private void serve(Socket socket)
    {
        try {
            socket.setTcpNoDelay(true);
            long idleNanos = settings.idleConnectionTimeout().toNanos();
            DeadlineInputStream timed = new DeadlineInputStream(socket, settings.idleConnectionTimeout().toMillis(), System.nanoTime() + idleNanos);
            InputStream in = new BufferedInputStream(timed);
            OutputStream out = new BufferedOutputStream(socket.getOutputStream());
            for (int served = 0; served < MAX_REQUESTS_PER_CONNECTION && !closed.get(); served++) {
                // the whole next request must arrive within the idle timeout: dripping bytes does not extend it
                timed.deadline(System.nanoTime() + idleNanos);
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
                if (!answer(frame, timed, out, socket)) {
                    return;
                }
            }
        }
        catch (SocketTimeoutException e) {
            LOG.debug("side channel of engine {}: closed a connection from {} that sent no whole request within {}", engineId,
                    socket.getRemoteSocketAddress(), settings.idleConnectionTimeout());
        }
        catch (SocketException e) {
            LOG.debug("side channel of engine {}: connection from {} ended: {}", engineId, socket.getRemoteSocketAddress(), e.toString());
        }
        catch (IOException e) {
            LOG.debug("side channel of engine {}: connection from {} failed: {}", engineId, socket.getRemoteSocketAddress(), e.toString());
        }
    }

    /** Answers one request; returns whether the connection may go on. */
    private boolean answer(byte[] frame, DeadlineInputStream in, OutputStream out, Socket socket)
            throws IOException
    {
        Opened request;
        RankKey rank;
        try {
            request = authenticator.open(Direction.REQUEST, frame, NO_NONCE);
            rank = SideChannelMessages.decodeRequest(request.content(), settings.limits());
        }
        catch (KvBridgeException e) {
            reject(in, out, socket, e);
            return false;
        }
        byte[] payload = payloads.get(rank);
        if (payload == null) {
            requestsRejected.incrementAndGet();
            String message = String.format(Locale.ROOT, "engine %s has no rank %s (it serves %s)", engineId, rank, payloadKeys());
            send(out, SideChannelMessages.errorReply(ErrorCode.PEER_UNKNOWN, message), request.nonce());
            return true;
        }
        // counted before the reply leaves, so that a client holding the reply sees the count
        requestsServed.incrementAndGet();
        send(out, SideChannelMessages.okReply(payload, clock.monotonicNanos()), request.nonce());
        return true;
    }

    private void reject(DeadlineInputStream in, OutputStream out, Socket socket, KvBridgeException e)
            throws IOException
    {
        requestsRejected.incrementAndGet();
        LOG.warn("side channel of engine {}: rejected a request from {} and closed the connection: {}", engineId,
                socket.getRemoteSocketAddress(), e.getMessage());
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

    private String payloadKeys()
    {
        return payloads.keySet().stream().sorted(RANK_ORDER).toList().toString();
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
        connections.forEach(SideChannelServer::closeQuietly);
        try {
            acceptThread.join(1_000);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
