package io.kvbridge.backend.tcp;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.Grants;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.OwnerThread;
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
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import jdk.net.ExtendedSocketOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner thread's loop: one selector over the listener and every connection, posts and calls
 * run between rounds, and a sweep that ends released and overdue transfers and drops peers that
 * connect and say nothing. It polls, yielding, {@code idle-spin-us} after its last event, then sleeps in the
 * selector, which a hand-over wakes only while it sleeps.
 *
 * <p>Threads: the owner thread, except the constructor, {@link #wake}, {@link #stop} and the
 * counters.
 */
final class TcpOwnerLoop
{
    private static final Logger LOG = LoggerFactory.getLogger(TcpOwnerLoop.class);
    /** Peers that connected and have not said who they are, kept at once: bounds what idle sockets hold. */
    static final int MAX_UNIDENTIFIED = 256;
    private static final long IDLE_SLEEP_MILLIS = 1_000;
    private static final long MALFORMED_LOG_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final String description;
    private final String agentName;
    private final long instanceId;
    private final TcpOptions options;
    private final Registrations<TcpRegistration> registrations;
    private final Grants grants;
    private final Inbox inbox;
    private final TransferTable<TcpTransfer> table;
    private final Selector selector;
    private final ServerSocketChannel server;
    private final int port;
    private final OwnerThread owner;
    // one instance: a method reference written in the loop would be a new object every round
    private final Consumer<SelectionKey> onReady = this::ready;
    private volatile boolean sleeping;
    private volatile boolean stop;
    private volatile long malformed;
    private volatile String lastMalformed;
    private long lastMalformedLog;

    // owner thread only
    private final List<InitiatorConnection> initiators = new ArrayList<>();
    private final List<TargetConnection> targets = new ArrayList<>();
    private boolean finishedAny;

    TcpOwnerLoop(String description, String agentName, long instanceId, TcpOptions options, Registrations<TcpRegistration> registrations, Grants grants,
            Inbox inbox, TransferTable<TcpTransfer> table)
    {
        this.description = description;
        this.agentName = agentName;
        this.instanceId = instanceId;
        this.options = options;
        this.registrations = registrations;
        this.grants = grants;
        this.inbox = inbox;
        this.table = table;
        Selector opened = null;
        ServerSocketChannel listener = null;
        try {
            opened = Selector.open();
            listener = ServerSocketChannel.open();
            listener.bind(new InetSocketAddress(options.host(), options.port()), 1024);
            listener.configureBlocking(false);
            listener.register(opened, SelectionKey.OP_ACCEPT);
            this.port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
        }
        catch (IOException | RuntimeException e) {
            closeQuietly(listener);
            closeQuietly(opened);
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT, "%s cannot listen on %s:%d: %s; choose another host or port",
                    description, options.host(), options.port(), e), e);
        }
        this.selector = opened;
        this.server = listener;
        this.owner = new OwnerThread("kvbridge-tcp-" + agentName, description, options.maxInFlight() + 1024, this::run, this::wake);
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

    int port()
    {
        return port;
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

    /** {@return whether anything waits on a timer: transfers in flight, peers yet to say who they are} */
    private boolean busy()
    {
        if (table.occupied() > 0) {
            return true;
        }
        for (TargetConnection target : targets) {
            if (!target.ready()) {
                return true;
            }
        }
        return false;
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
                LOG.debug("{}: accepting a connection failed", description, e);
                return;
            }
            if (channel == null) {
                return;
            }
            String remote;
            try {
                remote = String.valueOf(channel.getRemoteAddress());
                configure(channel);
            }
            catch (IOException e) {
                closeQuietly(channel);
                continue;
            }
            dropOldestUnidentified();
            TargetConnection connection = new TargetConnection(this, channel, remote);
            try {
                connection.key = channel.register(selector, SelectionKey.OP_READ, connection);
            }
            catch (IOException e) {
                closeQuietly(channel);
                continue;
            }
            targets.add(connection);
        }
    }

    private void dropOldestUnidentified()
    {
        int unidentified = 0;
        TargetConnection oldest = null;
        for (TargetConnection target : targets) {
            if (!target.ready()) {
                unidentified++;
                if (oldest == null || target.acceptedNanos() - oldest.acceptedNanos() < 0) {
                    oldest = target;
                }
            }
        }
        if (unidentified >= MAX_UNIDENTIFIED && oldest != null) {
            oldest.close("it had not said who it is when " + MAX_UNIDENTIFIED + " other peers were waiting to");
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
        for (int i = targets.size() - 1; i >= 0 && i < targets.size(); i--) {
            TargetConnection target = targets.get(i);
            if (!target.ready() && now - target.acceptedNanos() > silence) {
                target.close("it said nothing within connect-timeout-ms=" + options.connectTimeoutMillis());
            }
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
            targets.remove((TargetConnection) connection);
        }
    }

    void notified(String peer, byte[] message)
    {
        inbox.add(peer, message);
    }

    void malformed(String peer, String what)
    {
        malformed++;
        lastMalformed = peer + ": " + what;
        long now = System.nanoTime();
        if (lastMalformedLog == 0 || now - lastMalformedLog > MALFORMED_LOG_NANOS) {
            lastMalformedLog = now;
            LOG.warn("{}: closed the connection of {}, which broke the protocol: {} ({} such connections so far; logged at most every 10 s)",
                    description, peer, what, malformed);
        }
    }

    /** {@return connections closed for breaking the protocol, with the latest} */
    Optional<String> problem()
    {
        long count = malformed;
        return count == 0 ? Optional.empty() : Optional.of(String.format(Locale.ROOT,
                "%s closed %d connections of peers that broke the protocol, the latest %s; check that peer's process and its kvbridge version",
                description, count, lastMalformed));
    }

    long malformedCount()
    {
        return malformed;
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
