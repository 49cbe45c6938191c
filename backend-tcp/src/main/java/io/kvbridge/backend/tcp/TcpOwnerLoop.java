package io.kvbridge.backend.tcp;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.Grants;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.LogInterval;
import io.kvbridge.transport.OwnerThread;
import io.kvbridge.transport.PeerText;
import io.kvbridge.transport.Registrations;
import io.kvbridge.transport.TransferTable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import jdk.net.ExtendedSocketOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner thread's loop: one selector over the listener and every connection, posts and calls
 * run between rounds, and a sweep that ends released and overdue transfers and drops peers that
 * connect and do not prove who they are in time. It polls, yielding, {@code idle-spin-us} after its last event, then sleeps in the
 * selector, which a hand-over wakes only while it sleeps.
 *
 * <p>The listener opens when the instance's metadata is first asked for ({@link #listen}): an
 * instance whose metadata no peer is given (the bridge's own, beside its ranks') accepts nothing.
 * Accepted connections go through {@link TcpAdmission}; when accepting fails (out of descriptors)
 * the listener is left alone for a while, with backoff, and the oldest pending connections are
 * closed, rather than the selector reporting it ready again at once, round after round.
 *
 * <p>Threads: the owner thread, except the constructor, {@link #wake}, {@link #stop} and the
 * counters.
 */
final class TcpOwnerLoop
{
    private static final Logger LOG = LoggerFactory.getLogger(TcpOwnerLoop.class);
    private static final long IDLE_SLEEP_MILLIS = 1_000;
    private static final long ACCEPT_BACKOFF_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final long ACCEPT_BACKOFF_MAX_NANOS = TimeUnit.SECONDS.toNanos(1);

    static {
        // loaded now rather than first on a path that runs when the process is out of descriptors:
        // loading a class from a directory or a jar not yet open takes one, and a failed load ends
        // the owner (it did, with NoClassDefFoundError, when accepting first failed)
        PeerText.printable("");
        TargetConnection.class.getName();
        TcpAdmission.class.getName();
    }

    private final String description;
    private final String agentName;
    private final long instanceId;
    private final TcpOptions options;
    private final Registrations<TcpRegistration> registrations;
    private final Grants grants;
    private final Inbox inbox;
    private final TransferTable<TcpTransfer> table;
    private final TcpHandshake handshake;
    private final TcpAdmission admission;
    private final TcpPeerFaults faults;
    private final Selector selector;
    private final OwnerThread owner;
    // opened by listen(), on the owner thread; read by others once it is set
    private volatile ServerSocketChannel server;
    private volatile int port;
    private SelectionKey serverKey;
    // accepting failed (out of descriptors): the listener is not watched until then
    private long acceptPausedUntil;
    private long acceptBackoffNanos = ACCEPT_BACKOFF_MIN_NANOS;
    private long acceptFailures;
    private final LogInterval acceptLog = new LogInterval(LogInterval.TEN_SECONDS_NANOS);
    // one instance: a method reference written in the loop would be a new object every round
    private final Consumer<SelectionKey> onReady = this::ready;
    private volatile boolean sleeping;
    private volatile boolean stop;

    // owner thread only
    private final List<InitiatorConnection> initiators = new ArrayList<>();
    private final List<TargetConnection> targets = new ArrayList<>();
    private boolean finishedAny;

    TcpOwnerLoop(String description, String agentName, long instanceId, TcpOptions options, Registrations<TcpRegistration> registrations, Grants grants,
            Inbox inbox, TransferTable<TcpTransfer> table, TcpHandshake handshake)
    {
        this.description = description;
        this.agentName = agentName;
        this.instanceId = instanceId;
        this.options = options;
        this.registrations = registrations;
        this.grants = grants;
        this.inbox = inbox;
        this.table = table;
        this.handshake = handshake;
        this.faults = new TcpPeerFaults(description, inbox);
        this.admission = new TcpAdmission(TimeUnit.MILLISECONDS.toNanos(options.connectTimeoutMillis()));
        try {
            this.selector = Selector.open();
        }
        catch (IOException e) {
            throw new KvBridgeException(ErrorCode.TRANSFER_FAILED, description + " cannot open a selector: " + e, e);
        }
        this.owner = new OwnerThread("kvbridge-tcp-" + agentName, description, options.maxInFlight() + 1024, this::run, this::wake);
    }

    /**
     * Opens the listener, once; later calls return its port. Owner thread.
     *
     * @return the port peers connect to.
     */
    int listen()
    {
        if (server != null) {
            return port;
        }
        ServerSocketChannel listener = null;
        try {
            listener = ServerSocketChannel.open();
            listener.bind(new InetSocketAddress(options.host(), options.port()), 1024);
            listener.configureBlocking(false);
            serverKey = listener.register(selector, SelectionKey.OP_ACCEPT);
            port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
            server = listener;
            return port;
        }
        catch (IOException | RuntimeException e) {
            closeQuietly(listener);
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT, "%s cannot listen on %s:%d: %s; choose another host or port",
                    description, options.host(), options.port(), e), e);
        }
    }

    OwnerThread owner()
    {
        return owner;
    }

    String description()
    {
        return description;
    }

    long instanceId()
    {
        return instanceId;
    }

    /** {@return the listener's port, 0 while it is not open} */
    int port()
    {
        return port;
    }

    TcpHandshake handshake()
    {
        return handshake;
    }

    TcpOptions options()
    {
        return options;
    }

    Registrations<TcpRegistration> registrations()
    {
        return registrations;
    }

    Grants grants()
    {
        return grants;
    }

    private void wake()
    {
        if (sleeping) {
            selector.wakeup();
        }
    }

    void stop()
    {
        stop = true;
        selector.wakeup();
    }

    private void run()
    {
        long spinNanos = TimeUnit.MICROSECONDS.toNanos(options.idleSpinMicros());
        long sweepNanos = options.transferTimeoutMillis() > 0 ? TimeUnit.MILLISECONDS.toNanos(10) : TimeUnit.MILLISECONDS.toNanos(100);
        long lastBusy = System.nanoTime();
        long nextSweep = lastBusy + sweepNanos;
        try {
            while (!stop) {
                int ran = owner.runQueued(256);
                int events = selector.selectNow(onReady);
                long now = System.nanoTime();
                if (acceptPausedUntil != 0 && now - acceptPausedUntil >= 0) {
                    resumeAccepting();
                }
                if (now - nextSweep >= 0) {
                    sweep(now);
                    nextSweep = now + sweepNanos;
                }
                wakeWaiter();
                if (ran > 0 || events > 0) {
                    lastBusy = now;
                    continue;
                }
                if (now - lastBusy < spinNanos) {
                    // yield, not spin: on a machine with fewer cores than busy threads a spinning owner keeps the poster off the CPU
                    Thread.yield();
                    continue;
                }
                sleeping = true;
                if (!owner.hasQueued() && !stop) {
                    long millis = busy() ? Math.max(1, TimeUnit.NANOSECONDS.toMillis(nextSweep - now)) : IDLE_SLEEP_MILLIS;
                    if (selector.select(onReady, millis) > 0) {
                        lastBusy = System.nanoTime();
                    }
                }
                sleeping = false;
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException(description + ": the selector failed", e);
        }
        finally {
            sleeping = false;
            shutdown();
        }
    }

    private void wakeWaiter()
    {
        if (finishedAny) {
            finishedAny = false;
            inbox.wake();
        }
    }

    /** {@return whether anything waits on a timer: transfers in flight, peers yet to prove who they are, a paused listener} */
    private boolean busy()
    {
        return table.occupied() > 0 || admission.pendingCount() > 0 || acceptPausedUntil != 0;
    }

    private void ready(SelectionKey key)
    {
        if (!key.isValid()) {
            return;
        }
        if (key.channel() == server) {
            accept();
            return;
        }
        TcpConnection connection = (TcpConnection) key.attachment();
        if (key.isConnectable()) {
            finishConnect((InitiatorConnection) connection);
            return;
        }
        if (key.isReadable()) {
            connection.readable();
        }
        if (key.isValid() && key.isWritable()) {
            connection.flush();
        }
    }

    private void accept()
    {
        for (int i = 0; i < 64; i++) {
            SocketChannel channel;
            try {
                channel = server.accept();
            }
            catch (IOException e) {
                pauseAccepting(e);
                return;
            }
            if (channel == null) {
                return;
            }
            acceptBackoffNanos = ACCEPT_BACKOFF_MIN_NANOS;
            TargetConnection connection;
            try {
                configure(channel);
                if (!(channel.getRemoteAddress() instanceof InetSocketAddress remote)) {
                    closeQuietly(channel);
                    continue;
                }
                connection = new TargetConnection(this, channel, remote);
                if (!connection.challenge()) {
                    closeQuietly(channel);
                    continue;
                }
                connection.key = channel.register(selector, SelectionKey.OP_READ, connection);
            }
            catch (IOException e) {
                closeQuietly(channel);
                continue;
            }
            targets.add(connection);
            TargetConnection displaced = admission.admit(connection);
            if (displaced != null) {
                displaced.close("it had not proved who it is when " + TcpAdmission.MAX_PENDING + " other connections (or "
                        + TcpAdmission.MAX_PENDING_PER_ADDRESS + " from its address) were waiting to");
            }
        }
    }

    /**
     * Accepting failed, most likely for want of descriptors: the listener would be reported ready
     * again at once, so it is not watched for a while (doubling up to a second while it keeps
     * failing), and the oldest half of the pending connections are closed to free descriptors.
     */
    private void pauseAccepting(IOException e)
    {
        acceptFailures++;
        long now = System.nanoTime();
        acceptPausedUntil = (now + acceptBackoffNanos) | 1;
        acceptBackoffNanos = Math.min(ACCEPT_BACKOFF_MAX_NANOS, acceptBackoffNanos * 2);
        if (serverKey != null && serverKey.isValid()) {
            serverKey.interestOps(0);
        }
        int shed = Math.max(1, admission.pendingCount() / 2);
        for (int i = 0; i < shed; i++) {
            TargetConnection oldest = admission.oldestPending();
            if (oldest == null) {
                break;
            }
            oldest.close("accepting failed and the oldest connections that had not proved who they are were closed to make room");
        }
        if (acceptLog.due(now)) {
            LOG.warn("{}: accepting a connection failed ({} times so far; logged at most every 10 s): {}; not accepting for {} ms and closed up to {}"
                    + " connections that had not proved who they are; if the process is out of descriptors, raise its limit (ulimit -n)",
                    description, acceptFailures, e.toString(), TimeUnit.NANOSECONDS.toMillis(acceptBackoffNanos / 2), shed);
        }
    }

    private void resumeAccepting()
    {
        acceptPausedUntil = 0;
        if (serverKey != null && serverKey.isValid()) {
            serverKey.interestOps(SelectionKey.OP_ACCEPT);
        }
    }

    private void configure(SocketChannel channel) throws IOException
    {
        channel.configureBlocking(false);
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        if (options.keepaliveSeconds() > 0) {
            channel.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
            try {
                channel.setOption(ExtendedSocketOptions.TCP_KEEPIDLE, options.keepaliveSeconds());
                channel.setOption(ExtendedSocketOptions.TCP_KEEPINTERVAL, 1);
                channel.setOption(ExtendedSocketOptions.TCP_KEEPCOUNT, 5);
            }
            catch (UnsupportedOperationException e) {
                LOG.debug("{}: TCP keepalive timing cannot be set here; the system's applies", description);
            }
        }
        if (options.socketBufferBytes() > 0) {
            channel.setOption(StandardSocketOptions.SO_SNDBUF, options.socketBufferBytes());
            channel.setOption(StandardSocketOptions.SO_RCVBUF, options.socketBufferBytes());
        }
    }

    /** Starts connecting to a peer; its hello follows once the socket connects. Owner thread. */
    InitiatorConnection open(TcpPeer peer, InetSocketAddress address)
    {
        SocketChannel channel = null;
        try {
            channel = SocketChannel.open();
            configure(channel);
            InitiatorConnection connection = new InitiatorConnection(this, channel, peer);
            boolean connected = channel.connect(address);
            connection.key = channel.register(selector, connected ? SelectionKey.OP_READ : SelectionKey.OP_CONNECT, connection);
            initiators.add(connection);
            if (connected) {
                connection.connected(instanceId, agentName);
            }
            return connection;
        }
        catch (IOException e) {
            closeQuietly(channel);
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, String.format(Locale.ROOT, "cannot connect to peer '%s' at %s: %s", peer.name(),
                    peer.address, e.getMessage()), e);
        }
    }

    private void finishConnect(InitiatorConnection connection)
    {
        try {
            if (connection.channel.finishConnect()) {
                connection.key.interestOps(SelectionKey.OP_READ);
                connection.connected(instanceId, agentName);
            }
        }
        catch (IOException e) {
            connection.close("connecting failed: " + e.getMessage());
        }
    }

    /** A posted transfer reaches the owner: its frames are queued on the peer's connection. */
    void start(TcpTransfer transfer)
    {
        InitiatorConnection connection = transfer.peer.connection;
        if (connection == null || connection.closed()) {
            String reason = connection == null ? "it is not connected" : connection.closedReason();
            finish(transfer, new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + transfer.peer.name() + "' cannot be used: " + reason));
            return;
        }
        if (transfer.copies.size() == 0) {
            if (transfer.notification.present()) {
                connection.notification(transfer.notification.bytes(), transfer.notification.length());
                connection.flush();
            }
            finish(transfer, null);
            return;
        }
        connection.enqueue(transfer);
    }

    /** Ends a transfer, once; the waiter is woken at the end of the round. */
    void finish(TcpTransfer transfer, KvBridgeException failure)
    {
        if (transfer.ended) {
            return;
        }
        transfer.ended = true;
        table.finish(transfer, failure);
        finishedAny = true;
    }

    /** Ends released and overdue transfers, and drops peers that connected and said nothing in time. */
    void sweep(long now)
    {
        for (int i = initiators.size() - 1; i >= 0 && i < initiators.size(); i--) {
            initiators.get(i).sweep(now);
        }
        long silence = TimeUnit.MILLISECONDS.toNanos(options.connectTimeoutMillis());
        TargetConnection oldest;
        while ((oldest = admission.oldestPending()) != null && now - oldest.acceptedNanos() > silence) {
            rejected(oldest, "it did not prove who it is within connect-timeout-ms=" + options.connectTimeoutMillis());
            oldest.close("it did not prove who it is within connect-timeout-ms=" + options.connectTimeoutMillis());
        }
        wakeWaiter();
    }

    /** Cuts off every peer still reading or writing under a key whose revoke timed out. */
    void cutOff(byte[] key)
    {
        for (int i = targets.size() - 1; i >= 0 && i < targets.size(); i--) {
            TargetConnection target = targets.get(i);
            if (target.holds(key)) {
                target.close("it was still reading or writing memory under a grant that was revoked");
            }
        }
    }

    /** Closes a connection of this instance, if open. */
    void close(TcpConnection connection, String reason)
    {
        connection.close(reason);
        wakeWaiter();
    }

    void forget(TcpConnection connection)
    {
        if (connection instanceof InitiatorConnection initiator) {
            initiators.remove(initiator);
        }
        else {
            TargetConnection target = (TargetConnection) connection;
            targets.remove(target);
            admission.closed(target, target.ready());
        }
    }

    /** A hello was verified: {@return false when the connection may not be kept, see {@link TcpAdmission#establish}} */
    boolean established(TargetConnection connection)
    {
        TcpAdmission.Promotion promotion = admission.establish(connection);
        if (promotion.displaced() != null) {
            promotion.displaced().close("it had sent nothing since its hello for connect-timeout-ms=" + options.connectTimeoutMillis() + " when "
                    + TcpAdmission.MAX_ESTABLISHED + " verified connections were held and another was verified");
        }
        return promotion.admitted();
    }

    /** A notification from a verified peer; dropped and counted when the inbox is full (nobody drains it). */
    void notified(String peer, byte[] message)
    {
        if (!inbox.add(peer, message)) {
            faults.dropped(peer);
        }
    }

    /** A connection that never proved who it is was closed: counted and logged, no problem of this instance. */
    void rejected(TargetConnection connection, String what)
    {
        faults.rejected(connection.peerName(), what);
    }

    /** A connection was closed for breaking the protocol: counted and logged, no problem of this instance. */
    void malformed(String name, String what)
    {
        faults.malformed(name, what);
    }

    TcpPeerFaults faults()
    {
        return faults;
    }

    TcpAdmission admission()
    {
        return admission;
    }

    private void shutdown()
    {
        for (InitiatorConnection connection : List.copyOf(initiators)) {
            connection.close("this instance was closed");
        }
        for (TargetConnection connection : List.copyOf(targets)) {
            connection.close("this instance was closed");
        }
        closeQuietly();
    }

    private void closeQuietly()
    {
        closeQuietly(server);
        closeQuietly(selector);
    }

    private static void closeQuietly(java.io.Closeable channel)
    {
        if (channel == null) {
            return;
        }
        try {
            channel.close();
        }
        catch (IOException e) {
            LOG.debug("closing a channel failed", e);
        }
    }
}
