package io.kvbridge.backend.cudaipc;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcSockets;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One thread's native buffers for control messages: a {@code msghdr}, its {@code iovec}, room for
 * one message and for the {@code SCM_RIGHTS} descriptors that may ride with it, and a
 * {@code pollfd} to wait on one socket. Reused for every message the thread sends or receives, so
 * sending a notification allocates nothing. Not thread-safe: one per thread.
 */
final class Wire
{
    static final int MAX_MESSAGE = 64 * 1024 + 64;
    static final int MAX_FDS = 64;
    private static final long CONTROL_BYTES = LibcSockets.CMSG_HEADER_BYTES + MAX_FDS * 4L;

    final MemorySegment data;
    final Errno errno;
    private final MemorySegment header;
    private final MemorySegment vector;
    private final MemorySegment control;
    private final MemorySegment pollfd;
    /** 16 bytes for small out-parameters ({@code SO_PEERCRED}). */
    final MemorySegment scratch;
    final int[] receivedFds = new int[MAX_FDS];
    int receivedFdCount;

    Wire()
    {
        // reclaimed with the wire: a thread that stops using it leaves nothing behind
        Arena arena = Arena.ofAuto();
        data = arena.allocate(MAX_MESSAGE, 16);
        header = arena.allocate(LibcSockets.MSGHDR_BYTES, 8);
        vector = arena.allocate(16, 8);
        control = arena.allocate(CONTROL_BYTES, 8);
        pollfd = arena.allocate(Libc.POLLFD_BYTES, 8);
        scratch = arena.allocate(16, 8);
        errno = new Errno(arena);
    }

    private void prepare(long length, long controlLength)
    {
        header.fill((byte) 0);
        vector.set(JAVA_LONG, 0, data.address());
        vector.set(JAVA_LONG, 8, length);
        header.set(JAVA_LONG, 16, vector.address());
        header.set(JAVA_LONG, 24, 1L);
        if (controlLength > 0) {
            header.set(JAVA_LONG, 32, control.address());
            header.set(JAVA_LONG, 40, controlLength);
        }
    }

    /**
     * Sends the first {@code length} bytes of {@link #data} as one message, with descriptors.
     *
     * @param fd a connected socket.
     * @param fds descriptors to pass, or null.
     * @param fdCount how many of them.
     * @param deadlineNanos when to give up if the peer's socket stays full.
     * @return null when sent, else why not (errno text).
     */
    String send(int fd, int length, int[] fds, int fdCount, long deadlineNanos)
    {
        long controlLength = 0;
        if (fdCount > 0) {
            controlLength = LibcSockets.CMSG_HEADER_BYTES + ((fdCount * 4L + 7) & ~7L);
            control.fill((byte) 0);
            control.set(JAVA_LONG, 0, LibcSockets.CMSG_HEADER_BYTES + fdCount * 4L);
            control.set(JAVA_INT, 8, LibcSockets.SOL_SOCKET);
            control.set(JAVA_INT, 12, LibcSockets.SCM_RIGHTS);
            for (int i = 0; i < fdCount; i++) {
                control.set(JAVA_INT, LibcSockets.CMSG_HEADER_BYTES + 4L * i, fds[i]);
            }
        }
        while (true) {
            prepare(length, controlLength);
            long sent = LibcSockets.sendmsg(fd, header.address(), LibcSockets.MSG_NOSIGNAL | LibcSockets.MSG_DONTWAIT, errno);
            if (sent == length) {
                return null;
            }
            if (sent >= 0) {
                return "sendmsg sent " + sent + " of " + length + " bytes";
            }
            if (errno.last() == Errno.EINTR) {
                continue;
            }
            if (errno.last() != Errno.EAGAIN) {
                return "sendmsg failed: errno " + errno.last() + " (" + Libc.strerror(errno.last()) + ")";
            }
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                return "the peer's socket stayed full past the deadline";
            }
            await(fd, (short) 0x4, left);
        }
    }

    /**
     * Receives one message into {@link #data}, with any descriptors into {@link #receivedFds}.
     *
     * @param fd a socket.
     * @return its length, 0 when the peer closed, -1 when nothing waits (errno EAGAIN), -2 on another error.
     * @throws KvBridgeException {@code PROTOCOL_ERROR} for a truncated message or descriptor list; the
     *     descriptors that did arrive are closed.
     */
    long receive(int fd)
    {
        prepare(MAX_MESSAGE, CONTROL_BYTES);
        receivedFdCount = 0;
        long length;
        do {
            length = LibcSockets.recvmsg(fd, header.address(), LibcSockets.MSG_DONTWAIT | LibcSockets.MSG_CMSG_CLOEXEC, errno);
        }
        while (length < 0 && errno.last() == Errno.EINTR);
        if (length < 0) {
            return errno.last() == Errno.EAGAIN ? -1 : -2;
        }
        long controlLength = header.get(JAVA_LONG, 40);
        if (controlLength >= LibcSockets.CMSG_HEADER_BYTES && control.get(JAVA_INT, 8) == LibcSockets.SOL_SOCKET && control.get(JAVA_INT, 12) == LibcSockets.SCM_RIGHTS) {
            long cmsgLength = control.get(JAVA_LONG, 0);
            int count = (int) Math.max(0, Math.min(MAX_FDS, (cmsgLength - LibcSockets.CMSG_HEADER_BYTES) / 4));
            for (int i = 0; i < count; i++) {
                receivedFds[i] = control.get(JAVA_INT, LibcSockets.CMSG_HEADER_BYTES + 4L * i);
            }
            receivedFdCount = count;
        }
        int flags = header.get(JAVA_INT, 48);
        if ((flags & (LibcSockets.MSG_CTRUNC | LibcSockets.MSG_TRUNC)) != 0) {
            closeReceived();
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "a control message of " + length + " bytes or its descriptors were truncated (flags=0x"
                    + Integer.toHexString(flags) + "); the peer sent more than " + MAX_MESSAGE + " bytes or " + MAX_FDS + " descriptors");
        }
        return length;
    }

    /** Closes descriptors received and not taken. */
    void closeReceived()
    {
        for (int i = 0; i < receivedFdCount; i++) {
            if (receivedFds[i] >= 0) {
                Libc.close(receivedFds[i], errno);
                receivedFds[i] = -1;
            }
        }
        receivedFdCount = 0;
    }

    /**
     * Waits until one socket is ready, at most a while.
     *
     * @return the returned events, 0 on timeout.
     */
    short await(int fd, short events, long nanos)
    {
        pollfd.set(JAVA_INT, 0, fd);
        pollfd.set(JAVA_SHORT, 4, events);
        pollfd.set(JAVA_SHORT, 6, (short) 0);
        int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, (nanos + 999_999) / 1_000_000));
        int ready = Libc.poll(pollfd.address(), 1, millis, errno);
        return ready > 0 ? pollfd.get(JAVA_SHORT, 6) : 0;
    }
}
