package io.kvbridge.transport.libc;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Unix-domain sockets through the C library, for what Java's own channels cannot do: pass file
 * descriptors ({@code sendmsg}/{@code recvmsg} with {@code SCM_RIGHTS}), {@code SOCK_SEQPACKET},
 * and read the kernel's record of the peer's process ({@code SO_PEERCRED}). Calls take the
 * caller's {@link Errno} as {@link Libc}'s do and allocate nothing.
 *
 * <p>Linux x86-64 and aarch64 (LP64) layouts: {@code msghdr} 56 bytes, {@code cmsghdr} 16 bytes
 * before its data, {@code sockaddr_un} 110 bytes.
 */
public final class LibcSockets
{
    /** Address family: Unix-domain. */
    public static final int AF_UNIX = 1;
    /** Socket type: reliable, ordered datagrams. */
    public static final int SOCK_SEQPACKET = 5;
    /** Socket type flag: non-blocking. */
    public static final int SOCK_NONBLOCK = 0x800;
    /** Socket type flag: close on exec. */
    public static final int SOCK_CLOEXEC = 0x80000;
    /** Option level of the socket itself. */
    public static final int SOL_SOCKET = 1;
    /** Control message type: file descriptors. */
    public static final int SCM_RIGHTS = 1;
    /** Socket option: the peer's credentials. */
    public static final int SO_PEERCRED = 17;
    /** Message flag: do not block. */
    public static final int MSG_DONTWAIT = 0x40;
    /** Message flag: no {@code SIGPIPE} on a closed peer. */
    public static final int MSG_NOSIGNAL = 0x4000;
    /** Received-message flag: control data was cut off. */
    public static final int MSG_CTRUNC = 0x8;
    /** Received-message flag: the datagram was cut off. */
    public static final int MSG_TRUNC = 0x20;
    /** Receive flag: received descriptors are close-on-exec. */
    public static final int MSG_CMSG_CLOEXEC = 0x40000000;
    /** Bytes of a {@code struct msghdr}. */
    public static final long MSGHDR_BYTES = 56;
    /** Bytes of a {@code struct cmsghdr} before its data. */
    public static final long CMSG_HEADER_BYTES = 16;
    /** Bytes of a {@code struct sockaddr_un}. */
    public static final int SOCKADDR_UN_BYTES = 110;
    /** The longest abstract socket name {@link #abstractAddress} takes. */
    public static final int MAX_ABSTRACT_NAME_BYTES = 100;

    private static final MethodHandle SOCKET = Downcalls.capturing("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle BIND = Downcalls.capturing("bind", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle LISTEN = Downcalls.capturing("listen", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle ACCEPT4 = Downcalls.capturing("accept4", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    private static final MethodHandle CONNECT = Downcalls.capturing("connect", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle SENDMSG = Downcalls.capturing("sendmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle RECVMSG = Downcalls.capturing("recvmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle GETSOCKOPT = Downcalls.capturing("getsockopt", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG,
            JAVA_LONG));

    private LibcSockets()
    {
    }

    /**
     * Creates a socket.
     *
     * @param domain such as {@link #AF_UNIX}.
     * @param type such as {@link #SOCK_SEQPACKET} | {@link #SOCK_CLOEXEC}.
     * @param protocol 0 for the type's own.
     * @param errno receives errno on failure.
     * @return the descriptor, or -1.
     */
    public static int socket(int domain, int type, int protocol, Errno errno)
    {
        try {
            return errno.result((int) SOCKET.invokeExact(errno.state, domain, type, protocol));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Writes an abstract-namespace {@code sockaddr_un}: a leading NUL, then the name, so nothing is
     * left on the file system to clean up.
     *
     * @param address at least {@link #SOCKADDR_UN_BYTES} bytes.
     * @param name at most {@link #MAX_ABSTRACT_NAME_BYTES} bytes.
     * @return the address length to pass.
     * @throws IllegalArgumentException for a longer name.
     */
    public static int abstractAddress(MemorySegment address, byte[] name)
    {
        if (name.length > MAX_ABSTRACT_NAME_BYTES) {
            throw new IllegalArgumentException("socket name of " + name.length + " bytes exceeds " + MAX_ABSTRACT_NAME_BYTES);
        }
        address.fill((byte) 0);
        address.set(JAVA_SHORT, 0, (short) AF_UNIX);
        MemorySegment.copy(name, 0, address, JAVA_BYTE, 3, name.length);
        return 3 + name.length;
    }

    /**
     * Binds a socket to an address.
     *
     * @param fd the socket.
     * @param address the address, such as from {@link #abstractAddress}.
     * @param length its length.
     * @param errno receives errno on failure ({@code EADDRINUSE}).
     * @return 0, or -1.
     */
    public static int bind(int fd, MemorySegment address, int length, Errno errno)
    {
        try {
            return errno.result((int) BIND.invokeExact(errno.state, fd, address.address(), length));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Marks a bound socket as accepting connections.
     *
     * @param fd the socket.
     * @param backlog how many pending connections the kernel keeps.
     * @param errno receives errno on failure.
     * @return 0, or -1.
     */
    public static int listen(int fd, int backlog, Errno errno)
    {
        try {
            return errno.result((int) LISTEN.invokeExact(errno.state, fd, backlog));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Accepts a pending connection, not asking for the peer's address.
     *
     * @param fd the listening socket.
     * @param flags such as {@link #SOCK_CLOEXEC}.
     * @param errno receives errno on failure ({@code EAGAIN}: none pending).
     * @return the connection's descriptor, or -1.
     */
    public static int accept4(int fd, int flags, Errno errno)
    {
        try {
            return errno.result((int) ACCEPT4.invokeExact(errno.state, fd, 0L, 0L, flags));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Connects a socket.
     *
     * @param fd the socket.
     * @param address the address, such as from {@link #abstractAddress}.
     * @param length its length.
     * @param errno receives errno on failure ({@code ECONNREFUSED}).
     * @return 0, or -1.
     */
    public static int connect(int fd, MemorySegment address, int length, Errno errno)
    {
        try {
            return errno.result((int) CONNECT.invokeExact(errno.state, fd, address.address(), length));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Sends a message.
     *
     * @param fd the socket.
     * @param msghdr the address of a {@code struct msghdr} ({@link #MSGHDR_BYTES}).
     * @param flags such as {@link #MSG_NOSIGNAL}.
     * @param errno receives errno on failure.
     * @return bytes sent, or -1.
     */
    public static long sendmsg(int fd, long msghdr, int flags, Errno errno)
    {
        try {
            return errno.result((long) SENDMSG.invokeExact(errno.state, fd, msghdr, flags));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Receives a message.
     *
     * @param fd the socket.
     * @param msghdr the address of a {@code struct msghdr} ({@link #MSGHDR_BYTES}).
     * @param flags such as {@link #MSG_DONTWAIT} | {@link #MSG_CMSG_CLOEXEC}.
     * @param errno receives errno on failure.
     * @return bytes received, 0 when the peer closed, or -1.
     */
    public static long recvmsg(int fd, long msghdr, int flags, Errno errno)
    {
        try {
            return errno.result((long) RECVMSG.invokeExact(errno.state, fd, msghdr, flags));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Reads the peer's process and user id of a connected Unix socket ({@code SO_PEERCRED}), which
     * the kernel recorded when the connection was made and the peer cannot forge.
     *
     * @param fd the connected socket.
     * @param credentials receives the pid at index 0 and the uid at index 1; -1 each on failure.
     * @param scratch 16 bytes of native memory, reused by the caller.
     * @param errno receives errno on failure.
     * @return 0, or -1.
     */
    public static int peerCredentials(int fd, int[] credentials, MemorySegment scratch, Errno errno)
    {
        try {
            scratch.set(JAVA_INT, 12, 12);
            int rc = errno.result((int) GETSOCKOPT.invokeExact(errno.state, fd, SOL_SOCKET, SO_PEERCRED, scratch.address(), scratch.address() + 12));
            credentials[0] = rc < 0 ? -1 : scratch.get(JAVA_INT, 0);
            credentials[1] = rc < 0 ? -1 : scratch.get(JAVA_INT, 4);
            return rc;
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }
}
