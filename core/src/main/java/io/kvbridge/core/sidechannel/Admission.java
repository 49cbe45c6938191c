package io.kvbridge.core.sidechannel;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which connections a side channel server holds, in two pools, so that sockets that never send a
 * valid request cannot starve the ones that do. A new connection is <i>pending</i> until its first
 * request is valid (authenticated, with a secret); pending connections are bounded in total and per
 * source address, and the newest displaces the oldest (preferring one with nothing to read yet),
 * so a flood of idle sockets only ever churns itself while a client that asks at once is served.
 * The bound per address is for other hosts only: every process on this host connects from loopback
 * or from the address it connects to, so that one address is all of this host's ranks together (a
 * multi-rank engine's handshakes on a busy machine reach the bound), and a local process picks any
 * address of the host it likes, so the bound would hold back only the legitimate ones; connections
 * from this host count toward the total bound. A connection whose first request was valid is
 * <i>established</i>: pending ones never displace it; when the established pool is full, a newly
 * established connection displaces the one idle the longest between requests, or is refused when
 * every established connection is busy.
 *
 * <p>Thread safe: one lock, held only for bookkeeping; sockets are closed by the caller, outside it.
 */
final class Admission
{
    enum State
    {
        PENDING,
        ESTABLISHED,
        CLOSED,
    }

    /** One accepted connection; its state changes only under the admission's lock. */
    static final class Connection
    {
        final Socket socket;
        final InetAddress address;
        // from a process on this host: loopback, or the very address it connected to
        final boolean thisHost;
        private State state = State.PENDING;
        // System.nanoTime() since which an established connection waits for its next request; -1 while it is busy
        private long idleSinceNanos = -1;
        // its first request was read whole and is being checked: spared like one waiting in the kernel
        private volatile boolean requestRead;

        Connection(Socket socket)
        {
            this(socket, socket.getRemoteSocketAddress() instanceof InetSocketAddress inet ? inet.getAddress() : InetAddress.getLoopbackAddress(),
                    socket.getLocalAddress());
        }

        /** A connection from {@code address}, accepted on {@code localAddress}. */
        Connection(Socket socket, InetAddress address, InetAddress localAddress)
        {
            this.socket = socket;
            this.address = address;
            // another host cannot complete a TCP handshake from the address it is connecting to
            this.thisHost = address.isLoopbackAddress() || address.equals(localAddress);
        }
    }

    /**
     * What promoting a pending connection decided.
     *
     * @param admitted whether the connection is established now.
     * @param refused whether it was refused because every established connection is busy (false
     *     when it had been displaced meanwhile).
     * @param displaced an idle established connection to close to make room, or null.
     */
    record Promotion(boolean admitted, boolean refused, Connection displaced)
    {
    }

    private static final int VICTIM_CANDIDATES = 8;

    private final int maxPending;
    private final int maxPendingPerAddress;
    private final int maxEstablished;
    private final Object lock = new Object();
    private final ArrayDeque<Connection> pending = new ArrayDeque<>();
    private final Map<InetAddress, ArrayDeque<Connection>> pendingByAddress = new HashMap<>();
    private final Set<Connection> established = new LinkedHashSet<>();

    Admission(int maxPending, int maxPendingPerAddress, int maxEstablished)
    {
        this.maxPending = maxPending;
        this.maxPendingPerAddress = maxPendingPerAddress;
        this.maxEstablished = maxEstablished;
    }

    /**
     * Admits a new connection as pending.
     *
     * @return the pending connections it displaces (to be closed by the caller); usually none.
     */
    List<Connection> admit(Connection connection)
    {
        List<Connection> displaced = new ArrayList<>(1);
        synchronized (lock) {
            ArrayDeque<Connection> ofAddress = pendingByAddress.computeIfAbsent(connection.address, ignored -> new ArrayDeque<>());
            if (!connection.thisHost && ofAddress.size() >= maxPendingPerAddress) {
                displaced.add(removePending(victim(ofAddress)));
            }
            else if (pending.size() >= maxPending) {
                displaced.add(removePending(victim(pending)));
            }
            pending.addLast(connection);
            pendingByAddress.computeIfAbsent(connection.address, ignored -> new ArrayDeque<>()).addLast(connection);
        }
        return displaced;
    }

    /**
     * The oldest pending connection that has not even a frame header waiting to be read: one whose
     * request already arrived, only not yet read by its thread (a busy machine), is spared while a
     * silent one is there to go instead. Looks at a few of the oldest only, so accepting stays cheap.
     */
    private static Connection victim(ArrayDeque<Connection> candidates)
    {
        int looked = 0;
        for (Connection candidate : candidates) {
            if (looked++ == VICTIM_CANDIDATES) {
                break;
            }
            if (!candidate.requestRead && waitingBytes(candidate) < Frames.HEADER_BYTES) {
                return candidate;
            }
        }
        return candidates.peekFirst();
    }

    private static int waitingBytes(Connection connection)
    {
        try {
            // FIONREAD under the socket's state lock: never waits for the connection's reader
            return connection.socket.getInputStream().available();
        }
        catch (IOException e) {
            return 0;
        }
    }

    private Connection removePending(Connection connection)
    {
        pending.remove(connection);
        ArrayDeque<Connection> ofAddress = pendingByAddress.get(connection.address);
        if (ofAddress != null) {
            ofAddress.remove(connection);
            if (ofAddress.isEmpty()) {
                pendingByAddress.remove(connection.address);
            }
        }
        connection.state = State.CLOSED;
        return connection;
    }

    /**
     * Moves a pending connection whose first request was valid to the established pool.
     *
     * @return whether it was admitted, and which idle connection to close for it.
     */
    Promotion promote(Connection connection)
    {
        synchronized (lock) {
            if (connection.state != State.PENDING) {
                // displaced meanwhile: its socket is being closed
                return new Promotion(false, false, null);
            }
            Connection displaced = null;
            if (established.size() >= maxEstablished) {
                for (Connection candidate : established) {
                    if (candidate.idleSinceNanos >= 0 && (displaced == null || candidate.idleSinceNanos - displaced.idleSinceNanos < 0)) {
                        displaced = candidate;
                    }
                }
                if (displaced == null) {
                    removePending(connection);
                    return new Promotion(false, true, null);
                }
                established.remove(displaced);
                displaced.state = State.CLOSED;
            }
            removePending(connection);
            connection.state = State.ESTABLISHED;
            established.add(connection);
            return new Promotion(true, false, displaced);
        }
    }

    /** A pending connection's first request was read whole; it is being checked. */
    void requestRead(Connection connection)
    {
        connection.requestRead = true;
    }

    /** An established connection waits for its next request from now on. */
    void idle(Connection connection)
    {
        synchronized (lock) {
            connection.idleSinceNanos = System.nanoTime();
        }
    }

    /** An established connection is handling a request. */
    void busy(Connection connection)
    {
        synchronized (lock) {
            connection.idleSinceNanos = -1;
        }
    }

    /** @return whether the connection is still waiting for its first request, not displaced. */
    boolean pending(Connection connection)
    {
        synchronized (lock) {
            return connection.state == State.PENDING;
        }
    }

    /** The connection ended; forget it. */
    void closed(Connection connection)
    {
        synchronized (lock) {
            if (connection.state == State.PENDING) {
                removePending(connection);
            }
            else if (connection.state == State.ESTABLISHED) {
                established.remove(connection);
            }
            connection.state = State.CLOSED;
        }
    }

    /** @return every connection held now, for closing the server. */
    List<Connection> all()
    {
        synchronized (lock) {
            List<Connection> all = new ArrayList<>(pending);
            all.addAll(established);
            return all;
        }
    }

    /** @return connections waiting for a valid first request. */
    int pendingCount()
    {
        synchronized (lock) {
            return pending.size();
        }
    }

    /** @return established connections. */
    int establishedCount()
    {
        synchronized (lock) {
            return established.size();
        }
    }

    /** @return established connections waiting for their next request: the ones a newly established connection may displace. */
    int idleCount()
    {
        synchronized (lock) {
            int idle = 0;
            for (Connection connection : established) {
                if (connection.idleSinceNanos >= 0) {
                    idle++;
                }
            }
            return idle;
        }
    }
}
