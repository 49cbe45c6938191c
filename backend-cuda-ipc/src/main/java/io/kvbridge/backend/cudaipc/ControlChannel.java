package io.kvbridge.backend.cudaipc;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.cudaipc.ControlAdmission.Pending;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.transport.PeerProcesses;
import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcSockets;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control path between {@code cuda-ipc} instances on one node: a {@code SOCK_SEQPACKET}
 * Unix-domain socket in the abstract namespace per instance (message boundaries kept by the kernel,
 * nothing on the file system to clean up), carrying the handshake, notifications and the file
 * descriptors of VMM and shared host allocations ({@code SCM_RIGHTS}). Descriptors travel over the
 * socket rather than through {@code pidfd_getfd}, because that needs ptrace rights over the
 * exporter, which Yama and container defaults deny between sibling processes.
 *
 * <p>An abstract socket has no file-system permissions: any process of the host may connect. So a
 * connection is answered nothing until it authenticated ({@link ControlClient} describes the
 * messages, {@link ControlAuth} the proofs), the kernel's {@code SO_PEERCRED} must agree with the
 * pid it claims (and with the pid of a connected peer's metadata of that name), and a descriptor is
 * passed only for a region that a live grant under the key the peer presents lies in. Connections
 * that have not authenticated are bounded and displaced ({@link ControlAdmission}); the accept loop
 * sheds them and pauses when the process runs out of descriptors, rather than spinning.
 *
 * <p>Threads: one platform thread ({@code kvbridge-cuda-ipc-io-<agent>}) polls the listening
 * socket and every connection, with a 200 ms timeout and an {@code eventfd} to be woken; it
 * answers handshakes and descriptor requests itself and hands notifications and hang-ups to
 * {@link ControlEvents}. Connecting and sending work from any thread with that thread's own {@link Wire}.
 */
final class ControlChannel
{
    private static final Logger LOG = LoggerFactory.getLogger(ControlChannel.class);

    static final byte HELLO = 1;
    static final byte FD_REQUEST = 2;
    static final byte FDS = 3;
    static final byte NOTIFY = 4;
    static final byte CHALLENGE = 5;
    static final byte PROOF = 6;
    static final byte ACCEPT = 7;
    /** Exporter to importer, on the importer's link: this instance closes; unmap its memory and say so. */
    static final byte CLOSING = 8;
    /** Importer to exporter, on its link: every mapping of the exporter's memory is closed and no copy runs against it. */
    static final byte UNMAPPED = 9;
    /** Exporter to importer, on the importer's link: close the mappings of these regions (count u16, ids i32...) and say so. */
    static final byte UNMAP = 10;
    /** Importer to exporter, on its link: the regions of the oldest {@link #UNMAP} are unmapped and no copy runs against them. */
    static final byte REGIONS_UNMAPPED = 11;
    static final byte VERSION = 2;
    /** A hello's bytes before the agent name. */
    static final int HELLO_BYTES = 41;
    static final int MAX_NOTIFICATION = 64 * 1024;
    /** Authenticated inbound connections held at once; a newer one beyond is refused. */
    static final int MAX_ESTABLISHED = 1024;
    static final ValueLayout.OfInt INT = JAVA_INT.withByteAlignment(1);
    static final ValueLayout.OfShort SHORT = JAVA_SHORT.withByteAlignment(1);
    private static final long SEND_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(2);
    private static final int POLL_MILLIS = 200;

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

    /** An authenticated connection, inbound, or an outbound link. */
    static final class Connection
    {
        final int fd;
        final boolean inbound;
        final int pid;
        final Link link;
        final String agent;
        final boolean primary;
        /** Sent {@link #CLOSING}, and neither {@link #UNMAPPED} nor a hang-up came back yet. */
        boolean awaitingUnmap;
        /** The {@link #UNMAP} notices sent and not answered, oldest first. */
        final ArrayDeque<CloseAcks> awaitingRegions = new ArrayDeque<>();

        Connection(int fd, boolean inbound, int pid, Link link, String agent, boolean primary)
        {
            this.fd = fd;
            this.inbound = inbound;
            this.pid = pid;
            this.link = link;
            this.agent = agent;
            this.primary = primary;
        }
    }

    private final String description;
    private final String agentName;
    private final ControlEvents events;
    private final ControlAuth auth;
    final String socketName;
    private final int wakeFd;
    private final Thread thread;
    private final ConcurrentLinkedQueue<Link> added = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Link> removed = new ConcurrentLinkedQueue<>();
    private final ThreadLocal<Wire> wires = ThreadLocal.withInitial(Wire::new);
    private final Errno wakeErrno = new Errno(Arena.ofAuto());
    private final MemorySegment wakeValue = Arena.ofAuto().allocate(8, 8);
    private final ControlListener listener;
    private final AtomicLong refused = new AtomicLong();
    private volatile String lastRefusal;
    private final PeerNotices notices;
    private volatile boolean stopping;
    // the channel's thread only
    private final byte[] keyScratch = new byte[TransferBackend.MAX_GRANT_KEY_BYTES];
    private int inboundCount;
    /** The processes of every peer the kernel vouched for, in either direction: how a dead writer is proven stopped. */
    final PeerProcesses processes = new PeerProcesses();

    ControlChannel(String description, String agentName, ControlAuth auth, ControlEvents events)
    {
        this.description = requireNonNull(description, "description is null");
        this.agentName = requireNonNull(agentName, "agentName is null");
        this.auth = requireNonNull(auth, "auth is null");
        this.events = requireNonNull(events, "events is null");
        Wire wire = wires.get();
        this.socketName = "kvbridge-cuda-ipc-" + Libc.getpid() + "-" + Long.toHexString(System.nanoTime() ^ CudaIpcTransferBackend.PROCESS_TOKEN)
                + "-" + Integer.toHexString(System.identityHashCode(this));
        int listen = LibcSockets.socket(LibcSockets.AF_UNIX, LibcSockets.SOCK_SEQPACKET | LibcSockets.SOCK_NONBLOCK | LibcSockets.SOCK_CLOEXEC, 0, wire.errno);
        if (listen < 0) {
            throw failure("socket(AF_UNIX, SOCK_SEQPACKET)", wire.errno.last());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = arena.allocate(LibcSockets.SOCKADDR_UN_BYTES);
            int length = LibcSockets.abstractAddress(address, socketName.getBytes(StandardCharsets.UTF_8));
            if (LibcSockets.bind(listen, address, length, wire.errno) < 0 || LibcSockets.listen(listen, 128, wire.errno) < 0) {
                int errno = wire.errno.last();
                Libc.close(listen, wire.errno);
                throw failure("bind/listen on @" + socketName, errno);
            }
        }
        int wake = Libc.eventfd(wire.errno);
        if (wake < 0) {
            int errno = wire.errno.last();
            Libc.close(listen, wire.errno);
            throw failure("eventfd", errno);
        }
        this.listener = new ControlListener(description, listen);
        this.wakeFd = wake;
        this.notices = new PeerNotices(SEND_DEADLINE_NANOS);
        this.thread = Thread.ofPlatform().daemon().name("kvbridge-cuda-ipc-io-" + agentName).unstarted(this::loop);
        thread.start();
    }

    private KvBridgeException failure(String what, int errno)
    {
        return new KvBridgeException(ErrorCode.NATIVE_ERROR, what + " failed for " + description + ": errno " + errno + " (" + Libc.strerror(errno) + ")");
    }

    /** @return true while the channel's thread runs. */
    boolean alive()
    {
        return thread.isAlive();
    }

    /** @return connections refused for failing the handshake or the kernel's credentials. */
    long refusedConnections()
    {
        return refused.get();
    }

    /** @return connections closed for not authenticating in time, or displaced by newer ones. */
    long shedConnections()
    {
        return listener.shed();
    }

    /** @return the refused connections with the latest reason, or empty when none was refused. */
    Optional<String> problem()
    {
        long count = refused.get();
        return count == 0 ? Optional.empty() : Optional.of("the control socket of " + description + " refused " + count
                + " connections that failed authentication; latest: " + lastRefusal);
    }

    /**
     * Connects to a peer's socket, authenticates both ways and keeps the connection as the peer's
     * outbound link (notifications go over it; its hang-up tells that the peer is gone).
     *
     * @param peerSocket the peer's abstract socket name, from its metadata.
     * @param peerPid the pid its metadata claims; the socket's owner must be that process.
     * @param peerAgent its agent name.
     * @param deadlineNanos when to give up.
     * @return the link.
     * @throws KvBridgeException {@code PEER_UNKNOWN} when the peer cannot be reached, is not who its
     *     metadata says, or fails authentication.
     */
    Link connect(String peerSocket, int peerPid, String peerAgent, long deadlineNanos)
    {
        int fd = ControlClient.open(wires.get(), auth, agentName, peerSocket, peerPid, peerAgent, true, deadlineNanos);
        // the socket's SO_PEERCRED pid matched the metadata's: that process is the peer
        processes.watch(peerAgent, peerPid);
        Link link = new Link(fd, peerAgent);
        added.add(link);
        wake();
        return link;
    }

    /**
     * Fetches the descriptors of some of a peer's regions under a grant key, over a connection of
     * its own (authenticated like a link) that is closed afterwards; runs on the calling thread.
     *
     * @param grantKey the key the peer's grants are under; empty for none.
     * @param regionIds the regions wanted.
     * @param fdsOut receives each region's descriptor, owned by the caller, or -1 where not granted.
     */
    void fetch(String peerSocket, int peerPid, String peerAgent, byte[] grantKey, int[] regionIds, int[] fdsOut, long deadlineNanos)
    {
        Wire wire = wires.get();
        Arrays.fill(fdsOut, -1);
        int fd = ControlClient.open(wire, auth, agentName, peerSocket, peerPid, peerAgent, false, deadlineNanos);
        boolean done = false;
        try {
            for (int start = 0; start < regionIds.length; start += Wire.MAX_FDS) {
                ControlClient.fetchFds(wire, fd, peerAgent, grantKey, regionIds, start, Math.min(regionIds.length, start + Wire.MAX_FDS), fdsOut,
                        deadlineNanos);
            }
            done = true;
        }
        finally {
            Libc.close(fd, wire.errno);
            if (!done) {
                for (int i = 0; i < fdsOut.length; i++) {
                    if (fdsOut[i] >= 0) {
                        Libc.close(fdsOut[i], wire.errno);
                        fdsOut[i] = -1;
                    }
                }
            }
        }
    }

    /**
     * Tells every peer connected to this instance that it closes, and waits until each said it
     * unmapped this instance's memory (or hung up), at most until the deadline.
     *
     * @return the agents that did not answer in time, one entry per connection; empty when all did.
     */
    List<String> closeHandshake(long deadlineNanos)
    {
        CloseAcks acks = notices.requestClose();
        wake();
        return acks.await(deadlineNanos, thread::isAlive);
    }

    /**
     * Tells the agents that were passed descriptors of some regions to unmap them, and waits until
     * each said it did (or hung up), at most until the deadline.
     *
     * @return the agents that did not answer in time, one entry per connection; empty when all did.
     */
    List<String> unmapHandshake(int[] regionIds, Set<String> agents, long deadlineNanos)
    {
        CloseAcks acks = notices.requestUnmap(regionIds, agents);
        wake();
        return acks.await(deadlineNanos, thread::isAlive);
    }

    /**
     * Tells the peer of a link that this instance unmapped its memory; from any thread.
     *
     * @return null when sent, else why not.
     */
    String unmapped(Link link)
    {
        return sendByte(link, UNMAPPED);
    }

    /**
     * Tells the peer of a link that the regions of its oldest {@link #UNMAP} notice are unmapped here; from any thread.
     *
     * @return null when sent, else why not.
     */
    String regionsUnmapped(Link link)
    {
        return sendByte(link, REGIONS_UNMAPPED);
    }

    private String sendByte(Link link, byte type)
    {
        if (link.closed) {
            return "its control connection is closed";
        }
        Wire wire = wires.get();
        wire.data.set(JAVA_BYTE, 0, type);
        return wire.send(link.fd, 1, null, 0, System.nanoTime() + SEND_DEADLINE_NANOS);
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
        finally {
            processes.close();
        }
    }

    private void wake()
    {
        synchronized (wakeValue) {
            wakeValue.set(JAVA_LONG, 0, 1L);
            Libc.write(wakeFd, wakeValue.address(), 8, wakeErrno);
        }
    }

    private void loop()
    {
        Wire wire = wires.get();
        List<Connection> connections = new ArrayList<>();
        List<Pending> polledPending = new ArrayList<>();
        Arena arena = Arena.ofConfined();
        int capacity = 16;
        MemorySegment fds = arena.allocate(Libc.POLLFD_BYTES * capacity, 8);
        try {
            while (!stopping) {
                takeLinks(wire, connections);
                notices.send(wire, connections);
                long now = System.nanoTime();
                listener.expire(wire, now);
                int total = 2 + listener.admission.size() + connections.size();
                if (total > capacity) {
                    capacity = Math.max(capacity * 2, total);
                    fds = arena.allocate(Libc.POLLFD_BYTES * capacity, 8);
                }
                setPoll(fds, 0, wakeFd);
                int listening = listener.pollFd();
                setPoll(fds, 1, listening);
                polledPending.clear();
                for (Pending connection : listener.admission.all()) {
                    setPoll(fds, 2 + polledPending.size(), connection.fd);
                    polledPending.add(connection);
                }
                int firstEstablished = 2 + polledPending.size();
                for (int i = 0; i < connections.size(); i++) {
                    setPoll(fds, firstEstablished + i, connections.get(i).fd);
                }
                int ready = Libc.poll(fds.address(), total, listener.pollMillis(now, POLL_MILLIS), wire.errno);
                if (ready <= 0) {
                    continue;
                }
                if (revents(fds, 0) != 0) {
                    Libc.read(wakeFd, wakeValue.address(), 8, wire.errno);
                }
                for (int i = 0; i < polledPending.size(); i++) {
                    short revents = revents(fds, 2 + i);
                    Pending connection = polledPending.get(i);
                    if (revents != 0) {
                        handshake(wire, connection, revents, connections);
                    }
                }
                // from the end, so a removal leaves the indices still to visit in place
                for (int i = connections.size() - 1; i >= 0; i--) {
                    if (firstEstablished + i >= total) {
                        continue;
                    }
                    Connection connection = connections.get(i);
                    if (fds.get(JAVA_INT, (firstEstablished + i) * Libc.POLLFD_BYTES) != connection.fd) {
                        continue;
                    }
                    short revents = revents(fds, firstEstablished + i);
                    if (revents == 0) {
                        continue;
                    }
                    String gone = (revents & Libc.POLLIN) != 0 ? read(wire, connection) : null;
                    if (gone == null && (revents & (Libc.POLLHUP | Libc.POLLERR | Libc.POLLNVAL)) != 0 && (revents & Libc.POLLIN) == 0) {
                        gone = "it closed the control connection";
                    }
                    if (gone != null) {
                        hangUp(wire, connection, gone);
                        connections.remove(i);
                    }
                }
                // last, so that descriptors closed by displacement are not reused within this round
                if (listening >= 0 && (revents(fds, 1) & Libc.POLLIN) != 0) {
                    listener.accept(wire);
                }
            }
        }
        catch (RuntimeException | Error e) {
            LOG.error("the control thread of {} stopped", description, e);
        }
        finally {
            for (Connection connection : connections) {
                Libc.close(connection.fd, wire.errno);
            }
            listener.close(wire);
            Libc.close(wakeFd, wire.errno);
            arena.close();
        }
    }

    private void takeLinks(Wire wire, List<Connection> connections)
    {
        Link link;
        while ((link = added.poll()) != null) {
            connections.add(new Connection(link.fd, false, -1, link, link.agent, true));
        }
        while ((link = removed.poll()) != null) {
            for (int i = 0; i < connections.size(); i++) {
                if (connections.get(i).link == link) {
                    Libc.close(link.fd, wire.errno);
                    connections.remove(i);
                    break;
                }
            }
        }
    }

    private static void setPoll(MemorySegment fds, int index, int fd)
    {
        long offset = index * Libc.POLLFD_BYTES;
        fds.set(JAVA_INT, offset, fd);
        fds.set(JAVA_SHORT, offset + 4, Libc.POLLIN);
        fds.set(JAVA_SHORT, offset + 6, (short) 0);
    }

    private static short revents(MemorySegment fds, int index)
    {
        return fds.get(JAVA_SHORT, index * Libc.POLLFD_BYTES + 6);
    }

    /** Advances a pending connection's handshake; refuses it, silently, at the first fault. */
    private void handshake(Wire wire, Pending connection, short revents, List<Connection> connections)
    {
        String refusal;
        if ((revents & Libc.POLLIN) == 0) {
            refusal = "";
        }
        else {
            long length;
            try {
                length = wire.receive(connection.fd);
                refusal = length == -1 ? null : length <= 0 ? "" : connection.saidHello() ? proof(wire, connection, (int) length, connections)
                        : ServerHandshake.hello(wire, connection, (int) length, auth, events);
            }
            catch (KvBridgeException e) {
                refusal = e.getMessage();
            }
            finally {
                wire.closeReceived();
            }
        }
        if (refusal != null && refusal.isEmpty()) {
            // it went away before authenticating: nothing to refuse
            listener.drop(wire, connection);
        }
        else if (refusal != null) {
            listener.admission.remove(connection);
            Libc.close(connection.fd, wire.errno);
            refused.incrementAndGet();
            lastRefusal = "pid " + connection.pid + " (uid " + connection.uid + "): " + refusal;
            LOG.debug("{}: refused a control connection from pid {} uid {}: {}", description, connection.pid, connection.uid, refusal);
        }
    }

    /** @return why the proof is refused, or null when the connection is established. */
    private String proof(Wire wire, Pending connection, int length, List<Connection> connections)
    {
        if (inboundCount >= MAX_ESTABLISHED) {
            return "agent '" + connection.agent + "' would exceed the " + MAX_ESTABLISHED + " control connections held already";
        }
        String refusal = ServerHandshake.proof(wire, connection, length, auth, agentName);
        if (refusal == null) {
            listener.admission.remove(connection);
            connections.add(new Connection(connection.fd, true, connection.pid, null, connection.agent, connection.primary));
            inboundCount++;
            // the hello's pid matched the socket's SO_PEERCRED pid: that process is the peer
            processes.watch(connection.agent, connection.pid);
        }
        return refusal;
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
                String problem = connection.inbound ? handle(wire, connection, (int) length) : onLink(wire, connection, (int) length);
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
        if (type == NOTIFY) {
            if (length - 1 > MAX_NOTIFICATION) {
                return "a notification of " + (length - 1) + " bytes exceeds " + MAX_NOTIFICATION;
            }
            byte[] message = new byte[length - 1];
            MemorySegment.copy(data, JAVA_BYTE, 1, message, 0, message.length);
            events.notification(connection.agent, message);
            return null;
        }
        if (type == UNMAPPED && length == 1) {
            notices.answeredAll(connection);
            return null;
        }
        if (type == REGIONS_UNMAPPED && length == 1) {
            notices.answeredOldestUnmap(connection);
            return null;
        }
        if (type == FD_REQUEST) {
            return ServerHandshake.answerFdRequest(wire, connection.fd, connection.agent, length, keyScratch, events);
        }
        return "it sent unknown message type " + type;
    }

    /** What arrives on an outbound link: only the peer's close and unmap notices. */
    private String onLink(Wire wire, Connection connection, int length)
    {
        MemorySegment data = wire.data;
        if (data.get(JAVA_BYTE, 0) == CLOSING && length == 1) {
            events.peerClosing(connection.link);
            return null;
        }
        int count = length >= 3 ? Short.toUnsignedInt(data.get(SHORT, 1)) : -1;
        if (data.get(JAVA_BYTE, 0) == UNMAP && count >= 0 && length == 3 + 4 * count) {
            int[] ids = new int[count];
            for (int i = 0; i < count; i++) {
                ids[i] = data.get(INT, 3 + 4L * i);
            }
            events.peerRevoked(connection.link, ids);
            return null;
        }
        return "it sent " + length + " bytes of type " + data.get(JAVA_BYTE, 0) + " on a link that carries only its close and unmap notices";
    }

    private void hangUp(Wire wire, Connection connection, String reason)
    {
        notices.answeredAll(connection);
        Libc.close(connection.fd, wire.errno);
        if (connection.inbound) {
            inboundCount--;
        }
        if (connection.link != null) {
            connection.link.closed = true;
        }
        boolean matters = connection.link != null || connection.primary;
        if (matters && !stopping) {
            LOG.debug("{}: peer '{}' is gone: {}", description, connection.agent, reason);
            events.peerGone(connection.agent, reason);
        }
        else if (!reason.equals("it closed the control connection")) {
            LOG.warn("{}: dropped a control connection of '{}' (pid {}): {}", description, connection.agent, connection.pid, reason);
        }
    }
}
