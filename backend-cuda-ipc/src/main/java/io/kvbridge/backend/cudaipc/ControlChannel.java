package io.kvbridge.backend.cudaipc;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.cudaipc.ffm.Posix;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control path between {@code cuda-ipc} instances on one node: a {@code SOCK_SEQPACKET}
 * Unix-domain socket in the abstract namespace per instance (message boundaries kept by the kernel,
 * nothing on the file system to clean up), carrying hellos, notifications and the file descriptors
 * of VMM and shared host allocations ({@code SCM_RIGHTS}). Descriptors travel over the socket
 * rather than through {@code pidfd_getfd}, because that needs ptrace rights over the exporter,
 * which Yama and container defaults deny between sibling processes such as a scheduler's workers;
 * a socket the exporter answers on needs no privilege and lets the exporter decide what it grants.
 *
 * <p>Each instance connects once to each peer (its outbound link) and says hello with its agent
 * name and pid, which must match the kernel's {@code SO_PEERCRED}; the peer then knows who sends
 * what arrives on that connection. A hang-up of a link in either direction is how a dead peer
 * process is noticed.
 *
 * <p>Threads: one platform thread ({@code kvbridge-cuda-ipc-io-<agent>}) polls the listening
 * socket and every connection, with a 200 ms timeout and an {@code eventfd} to be woken; it
 * answers descriptor requests itself and hands notifications and hang-ups to {@link Events}.
 * Sending works from any thread with that thread's own {@link Wire}.
 */
final class ControlChannel
{
    private static final Logger LOG = LoggerFactory.getLogger(ControlChannel.class);

    static final byte HELLO = 1;
    static final byte FD_REQUEST = 2;
    static final byte FDS = 3;
    static final byte NOTIFY = 4;
    static final int MAX_NOTIFICATION = 64 * 1024;
    private static final long SEND_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(2);
    private static final int POLL_MILLIS = 200;

    /** What the channel hands to its transport. */
    interface Events
    {
        /** A peer's notification arrived; {@code message} is owned by the receiver. */
        void notification(String sender, byte[] message);

        /** A link to or from the peer of that agent name hung up. */
        void peerGone(String agentName, String reason);

        /**
         * The descriptor of a region this instance exports, to pass to a peer that asked.
         *
         * @return the descriptor (still owned by the transport), or -1 when the region is not exported.
         */
        int exportedFd(int regionId);
    }

    /** An outbound connection to one peer. */
    static final class Link
    {
        final int fd;
        final String agent;
        volatile boolean closed;

        Link(int fd, String agent)
        {
            this.fd = fd;
            this.agent = agent;
        }
    }

    private static final class Connection
    {
        final int fd;
        final boolean inbound;
        final int credentialPid;
        final Link link;
        String agent;
        boolean primary;

        Connection(int fd, boolean inbound, int credentialPid, Link link)
        {
            this.fd = fd;
            this.inbound = inbound;
            this.credentialPid = credentialPid;
            this.link = link;
            this.agent = link == null ? null : link.agent;
        }
    }

    private final String description;
    private final String agentName;
    private final Events events;
    final String socketName;
    private final int listenFd;
    private final int wakeFd;
    private final Thread thread;
    private final ConcurrentLinkedQueue<Link> added = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Link> removed = new ConcurrentLinkedQueue<>();
    private final ThreadLocal<Wire> wires = ThreadLocal.withInitial(Wire::new);
    private final Posix.Errno wakeErrno = new Posix.Errno(Arena.ofAuto());
    private final MemorySegment wakeValue = Arena.ofAuto().allocate(8, 8);
    private volatile boolean stopping;

    ControlChannel(String description, String agentName, Events events)
    {
        this.description = requireNonNull(description, "description is null");
        this.agentName = requireNonNull(agentName, "agentName is null");
        this.events = requireNonNull(events, "events is null");
        Wire wire = wires.get();
        this.socketName = "kvbridge-cuda-ipc-" + Posix.getpid() + "-" + Long.toHexString(System.nanoTime() ^ CudaIpcTransferBackend.PROCESS_TOKEN)
                + "-" + Integer.toHexString(System.identityHashCode(this));
        int listen = Posix.socket(Posix.AF_UNIX, Posix.SOCK_SEQPACKET | Posix.SOCK_NONBLOCK | Posix.SOCK_CLOEXEC, 0, wire.errno);
        if (listen < 0) {
            throw failure("socket(AF_UNIX, SOCK_SEQPACKET)", wire.errno.last());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = arena.allocate(Posix.SOCKADDR_UN_BYTES);
            int length = Posix.abstractAddress(address, socketName.getBytes(StandardCharsets.UTF_8));
            if (Posix.bind(listen, address, length, wire.errno) < 0 || Posix.listen(listen, 128, wire.errno) < 0) {
                int errno = wire.errno.last();
                Posix.close(listen, wire.errno);
                throw failure("bind/listen on @" + socketName, errno);
            }
        }
        int wake = Posix.eventfd(wire.errno);
        if (wake < 0) {
            int errno = wire.errno.last();
            Posix.close(listen, wire.errno);
            throw failure("eventfd", errno);
        }
        this.listenFd = listen;
        this.wakeFd = wake;
        this.thread = Thread.ofPlatform().daemon().name("kvbridge-cuda-ipc-io-" + agentName).unstarted(this::loop);
        thread.start();
    }

    private KvBridgeException failure(String what, int errno)
    {
        return new KvBridgeException(ErrorCode.NATIVE_ERROR, what + " failed for " + description + ": errno " + errno + " (" + Posix.strerror(errno) + ")");
    }

    /** @return true while the channel's thread runs. */
    boolean alive()
    {
        return thread.isAlive();
    }

    /**
     * Connects to a peer's socket, says hello and fetches the descriptors of some of its regions;
     * runs on the calling thread, bounded by a deadline.
     *
     * @param peerSocket the peer's abstract socket name, from its metadata.
     * @param peerPid the pid its metadata claims; the socket's owner must be that process.
     * @param peerAgent its agent name.
     * @param regionIds regions whose descriptors are wanted (at most {@link Wire#MAX_FDS} per call are asked at once).
     * @param fdsOut receives each region's descriptor, owned by the caller, or -1 where not granted.
     * @param keep true to keep the connection as the peer's outbound link; false to close it after the exchange.
     * @param deadlineNanos when to give up.
     * @return the link when kept, else null.
     * @throws KvBridgeException {@code PEER_UNKNOWN} when the peer cannot be reached or answers wrongly.
     */
    Link connect(String peerSocket, int peerPid, String peerAgent, int[] regionIds, int[] fdsOut, boolean keep, long deadlineNanos)
    {
        Wire wire = wires.get();
        int fd = Posix.socket(Posix.AF_UNIX, Posix.SOCK_SEQPACKET | Posix.SOCK_CLOEXEC, 0, wire.errno);
        if (fd < 0) {
            throw failure("socket(AF_UNIX, SOCK_SEQPACKET)", wire.errno.last());
        }
        boolean done = false;
        try {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment address = arena.allocate(Posix.SOCKADDR_UN_BYTES);
                int length = Posix.abstractAddress(address, peerSocket.getBytes(StandardCharsets.UTF_8));
                if (Posix.connect(fd, address, length, wire.errno) < 0) {
                    throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot reach peer '" + peerAgent + "' at @" + peerSocket + ": errno "
                            + wire.errno.last() + " (" + Posix.strerror(wire.errno.last()) + "); the peer must run on this node, in this network "
                            + "namespace, and be open");
                }
            }
            int owner = Posix.peerPid(fd, wire.errno);
            if (owner != peerPid) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peerAgent + "' claims pid=" + peerPid + " but its socket belongs to pid="
                        + owner + "; refusing metadata that does not match the process serving it");
            }
            sendHello(wire, fd, keep, deadlineNanos);
            for (int start = 0; start < regionIds.length; start += Wire.MAX_FDS) {
                fetchFds(wire, fd, peerAgent, regionIds, start, Math.min(regionIds.length, start + Wire.MAX_FDS), fdsOut, deadlineNanos);
            }
            done = true;
        }
        finally {
            if (!done || !keep) {
                Posix.close(fd, wire.errno);
            }
        }
        if (!keep) {
            return null;
        }
        Link link = new Link(fd, peerAgent);
        added.add(link);
        wake();
        return link;
    }

    private void sendHello(Wire wire, int fd, boolean primary, long deadlineNanos)
    {
        byte[] name = agentName.getBytes(StandardCharsets.UTF_8);
        wire.data.set(JAVA_BYTE, 0, HELLO);
        wire.data.set(JAVA_BYTE, 1, (byte) (primary ? 1 : 0));
        wire.data.set(JAVA_INT_UNALIGNED, 2, Posix.getpid());
        wire.data.set(JAVA_SHORT_UNALIGNED, 6, (short) name.length);
        MemorySegment.copy(name, 0, wire.data, JAVA_BYTE, 8, name.length);
        String problem = wire.send(fd, 8 + name.length, null, 0, deadlineNanos);
        if (problem != null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "saying hello to a cuda-ipc peer failed: " + problem);
        }
    }

    private static final java.lang.foreign.ValueLayout.OfInt JAVA_INT_UNALIGNED = JAVA_INT.withByteAlignment(1);
    private static final java.lang.foreign.ValueLayout.OfShort JAVA_SHORT_UNALIGNED = JAVA_SHORT.withByteAlignment(1);

    private void fetchFds(Wire wire, int fd, String peerAgent, int[] ids, int from, int to, int[] fdsOut, long deadlineNanos)
    {
        int count = to - from;
        wire.data.set(JAVA_BYTE, 0, FD_REQUEST);
        wire.data.set(JAVA_SHORT_UNALIGNED, 1, (short) count);
        for (int i = 0; i < count; i++) {
            wire.data.set(JAVA_INT_UNALIGNED, 3 + 4L * i, ids[from + i]);
        }
        String problem = wire.send(fd, 3 + 4 * count, null, 0, deadlineNanos);
        if (problem != null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "asking peer '" + peerAgent + "' for descriptors failed: " + problem);
        }
        while (true) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peerAgent + "' did not send the descriptors of " + count
                        + " regions in time; it may be stuck or closing");
            }
            wire.await(fd, Posix.POLLIN, left);
            long length = wire.receive(fd);
            if (length == -1) {
                continue;
            }
            if (length <= 0) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peerAgent + "' closed the connection instead of sending descriptors");
            }
            try {
                if (length != 3 + 5L * count || wire.data.get(JAVA_BYTE, 0) != FDS || Short.toUnsignedInt(wire.data.get(JAVA_SHORT_UNALIGNED, 1)) != count) {
                    throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "peer '" + peerAgent + "' answered a descriptor request for " + count
                            + " regions with " + length + " bytes of another shape");
                }
                int granted = 0;
                for (int i = 0; i < count; i++) {
                    if (wire.data.get(JAVA_INT_UNALIGNED, 3 + 5L * i) != ids[from + i]) {
                        throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "peer '" + peerAgent + "' answered for region "
                                + wire.data.get(JAVA_INT_UNALIGNED, 3 + 5L * i) + " where region " + ids[from + i] + " was asked");
                    }
                    granted += wire.data.get(JAVA_BYTE, 7 + 5L * i) == 1 ? 1 : 0;
                }
                if (granted != wire.receivedFdCount) {
                    throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "peer '" + peerAgent + "' granted " + granted + " descriptors but passed "
                            + wire.receivedFdCount);
                }
                int next = 0;
                for (int i = 0; i < count; i++) {
                    if (wire.data.get(JAVA_BYTE, 7 + 5L * i) == 1) {
                        fdsOut[from + i] = wire.receivedFds[next];
                        wire.receivedFds[next++] = -1;
                    }
                    else {
                        fdsOut[from + i] = -1;
                    }
                }
                wire.receivedFdCount = 0;
                return;
            }
            finally {
                wire.closeReceived();
            }
        }
    }

    /**
     * Sends a notification over a peer's link, from any thread; allocates nothing.
     *
     * @return null when sent, else why not.
     */
    String notify(Link link, byte[] message, int length)
    {
        if (link.closed) {
            return "its control connection is closed";
        }
        Wire wire = wires.get();
        wire.data.set(JAVA_BYTE, 0, NOTIFY);
        MemorySegment.copy(message, 0, wire.data, JAVA_BYTE, 1, length);
        return wire.send(link.fd, 1 + length, null, 0, System.nanoTime() + SEND_DEADLINE_NANOS);
    }

    /** Closes a peer's link; the channel's thread closes the descriptor. */
    void close(Link link)
    {
        if (link != null && !link.closed) {
            link.closed = true;
            removed.add(link);
            wake();
        }
    }

    /** Stops the thread and closes every socket; waits at most a second. */
    void close()
    {
        stopping = true;
        wake();
        try {
            thread.join(TimeUnit.SECONDS.toMillis(1));
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void wake()
    {
        synchronized (wakeValue) {
            wakeValue.set(JAVA_LONG, 0, 1L);
            Posix.write(wakeFd, wakeValue.address(), 8, wakeErrno);
        }
    }

    private void loop()
    {
        Wire wire = wires.get();
        List<Connection> connections = new ArrayList<>();
        Arena arena = Arena.ofConfined();
        int capacity = 16;
        MemorySegment fds = arena.allocate(Posix.POLLFD_BYTES * capacity, 8);
        try {
            while (!stopping) {
                Link link;
                while ((link = added.poll()) != null) {
                    connections.add(new Connection(link.fd, false, -1, link));
                }
                while ((link = removed.poll()) != null) {
                    for (int i = 0; i < connections.size(); i++) {
                        if (connections.get(i).link == link) {
                            Posix.close(link.fd, wire.errno);
                            connections.remove(i);
                            break;
                        }
                    }
                }
                if (connections.size() + 2 > capacity) {
                    capacity = Math.max(capacity * 2, connections.size() + 2);
                    fds = arena.allocate(Posix.POLLFD_BYTES * capacity, 8);
                }
                setPoll(fds, 0, wakeFd);
                setPoll(fds, 1, listenFd);
                for (int i = 0; i < connections.size(); i++) {
                    setPoll(fds, i + 2, connections.get(i).fd);
                }
                int ready = Posix.poll(fds.address(), connections.size() + 2, POLL_MILLIS, wire.errno);
                if (ready <= 0) {
                    continue;
                }
                if (revents(fds, 0) != 0) {
                    Posix.read(wakeFd, wakeValue.address(), 8, wire.errno);
                }
                if ((revents(fds, 1) & Posix.POLLIN) != 0) {
                    accept(wire, connections);
                }
                // from the end, so a removal leaves the indices still to visit in place
                int polled = Math.min(connections.size(), (int) (fds.byteSize() / Posix.POLLFD_BYTES) - 2);
                for (int i = polled - 1; i >= 0; i--) {
                    Connection connection = connections.get(i);
                    if (fds.get(JAVA_INT, (i + 2) * Posix.POLLFD_BYTES) != connection.fd) {
                        continue;
                    }
                    short revents = revents(fds, i + 2);
                    if (revents == 0) {
                        continue;
                    }
                    String gone = (revents & Posix.POLLIN) != 0 ? read(wire, connection) : null;
                    if (gone == null && (revents & (Posix.POLLHUP | Posix.POLLERR | Posix.POLLNVAL)) != 0 && (revents & Posix.POLLIN) == 0) {
                        gone = "it closed the control connection";
                    }
                    if (gone != null) {
                        hangUp(wire, connection, gone);
                        connections.remove(i);
                    }
                }
            }
        }
        catch (RuntimeException | Error e) {
            LOG.error("the control thread of {} stopped", description, e);
        }
        finally {
            for (Connection connection : connections) {
                Posix.close(connection.fd, wire.errno);
            }
            Posix.close(listenFd, wire.errno);
            Posix.close(wakeFd, wire.errno);
            arena.close();
        }
    }

    private static void setPoll(MemorySegment fds, int index, int fd)
    {
        long offset = index * Posix.POLLFD_BYTES;
        fds.set(JAVA_INT, offset, fd);
        fds.set(JAVA_SHORT, offset + 4, Posix.POLLIN);
        fds.set(JAVA_SHORT, offset + 6, (short) 0);
    }

    private static short revents(MemorySegment fds, int index)
    {
        return fds.get(JAVA_SHORT, index * Posix.POLLFD_BYTES + 6);
    }

    private void accept(Wire wire, List<Connection> connections)
    {
        while (true) {
            int fd = Posix.accept4(listenFd, Posix.SOCK_NONBLOCK | Posix.SOCK_CLOEXEC, wire.errno);
            if (fd < 0) {
                return;
            }
            connections.add(new Connection(fd, true, Posix.peerPid(fd, wire.errno), null));
        }
    }

    /** @return why the connection must go, or null to keep it. */
    private String read(Wire wire, Connection connection)
    {
        while (true) {
            long length;
            try {
                length = wire.receive(connection.fd);
            }
            catch (KvBridgeException e) {
                return e.getMessage();
            }
            if (length == -1) {
                return null;
            }
            if (length == 0) {
                return "it closed the control connection";
            }
            if (length < 0) {
                return "reading its control connection failed: errno " + wire.errno.last();
            }
            try {
                String problem = connection.inbound ? handle(wire, connection, (int) length) : "it sent a message on a connection it should only read";
                if (problem != null) {
                    return problem;
                }
            }
            finally {
                wire.closeReceived();
            }
        }
    }

    private String handle(Wire wire, Connection connection, int length)
    {
        MemorySegment data = wire.data;
        byte type = data.get(JAVA_BYTE, 0);
        if (type == HELLO) {
            if (length < 8 || connection.agent != null) {
                return "a hello of " + length + " bytes is malformed or repeated";
            }
            int pid = data.get(JAVA_INT_UNALIGNED, 2);
            int nameLength = Short.toUnsignedInt(data.get(JAVA_SHORT_UNALIGNED, 6));
            if (nameLength == 0 || nameLength > CudaIpcMetadata.MAX_NAME_BYTES || 8 + nameLength != length) {
                return "a hello names an agent of " + nameLength + " bytes in a message of " + length;
            }
            if (pid != connection.credentialPid) {
                return "its hello claims pid=" + pid + " but the kernel says pid=" + connection.credentialPid;
            }
            byte[] name = new byte[nameLength];
            MemorySegment.copy(data, JAVA_BYTE, 8, name, 0, nameLength);
            connection.agent = new String(name, StandardCharsets.UTF_8);
            connection.primary = data.get(JAVA_BYTE, 1) == 1;
            return null;
        }
        if (connection.agent == null) {
            return "it sent message type " + type + " before its hello";
        }
        if (type == NOTIFY) {
            if (length - 1 > MAX_NOTIFICATION) {
                return "a notification of " + (length - 1) + " bytes exceeds " + MAX_NOTIFICATION;
            }
            byte[] message = new byte[length - 1];
            MemorySegment.copy(data, JAVA_BYTE, 1, message, 0, message.length);
            events.notification(connection.agent, message);
            return null;
        }
        if (type == FD_REQUEST) {
            int count = length >= 3 ? Short.toUnsignedInt(data.get(JAVA_SHORT_UNALIGNED, 1)) : -1;
            if (count < 0 || count > Wire.MAX_FDS || length != 3 + 4 * count) {
                return "a descriptor request of " + length + " bytes asks for " + count + " regions (at most " + Wire.MAX_FDS + ")";
            }
            int[] ids = new int[count];
            int[] granted = new int[count];
            int grantedCount = 0;
            for (int i = 0; i < count; i++) {
                ids[i] = data.get(JAVA_INT_UNALIGNED, 3 + 4L * i);
            }
            for (int i = 0; i < count; i++) {
                int fd = events.exportedFd(ids[i]);
                data.set(JAVA_INT_UNALIGNED, 3 + 5L * i, ids[i]);
                data.set(JAVA_BYTE, 7 + 5L * i, (byte) (fd >= 0 ? 1 : 0));
                if (fd >= 0) {
                    granted[grantedCount++] = fd;
                }
            }
            data.set(JAVA_BYTE, 0, FDS);
            data.set(JAVA_SHORT_UNALIGNED, 1, (short) count);
            String problem = wire.send(connection.fd, 3 + 5 * count, granted, grantedCount, System.nanoTime() + SEND_DEADLINE_NANOS);
            return problem == null ? null : "answering its descriptor request failed: " + problem;
        }
        return "it sent unknown message type " + type;
    }

    private void hangUp(Wire wire, Connection connection, String reason)
    {
        Posix.close(connection.fd, wire.errno);
        if (connection.link != null) {
            connection.link.closed = true;
        }
        boolean matters = connection.link != null || connection.primary;
        if (matters && connection.agent != null && !stopping) {
            LOG.debug("{}: peer '{}' is gone: {}", description, connection.agent, reason);
            events.peerGone(connection.agent, reason);
        }
        else if (!reason.equals("it closed the control connection")) {
            LOG.warn("{}: dropped a control connection from pid {}: {}", description, connection.credentialPid, reason);
        }
    }
}
