package io.kvbridge.backend.cudaipc.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The few libc functions the transport needs where the JDK has no API: Unix-domain
 * {@code SOCK_SEQPACKET} sockets that carry file descriptors ({@code sendmsg}/{@code recvmsg} with
 * {@code SCM_RIGHTS}; Java's own Unix-domain channels cannot pass descriptors), {@code poll},
 * {@code memfd_create} and {@code mmap} for shareable host memory, and an {@code eventfd} to wake
 * a polling thread. Every call captures {@code errno}; a wrapper returns the C result and leaves
 * the errno of the last failed call in the caller's {@link Errno}.
 *
 * <p>Linux x86-64 and aarch64 (LP64) layouts: {@code msghdr} 56 bytes, {@code cmsghdr} 16 bytes
 * before its data, {@code sockaddr_un} 110 bytes.
 */
public final class Posix
{
    public static final int AF_UNIX = 1;
    public static final int SOCK_SEQPACKET = 5;
    public static final int SOCK_NONBLOCK = 0x800;
    public static final int SOCK_CLOEXEC = 0x80000;
    public static final int SOL_SOCKET = 1;
    public static final int SCM_RIGHTS = 1;
    public static final int SO_PEERCRED = 17;
    public static final int MSG_DONTWAIT = 0x40;
    public static final int MSG_NOSIGNAL = 0x4000;
    public static final int MSG_CTRUNC = 0x8;
    public static final int MSG_TRUNC = 0x20;
    public static final int MSG_CMSG_CLOEXEC = 0x40000000;
    public static final short POLLIN = 0x1;
    public static final short POLLERR = 0x8;
    public static final short POLLHUP = 0x10;
    public static final short POLLNVAL = 0x20;
    public static final int EINTR = 4;
    public static final int EAGAIN = 11;
    public static final int EMFILE = 24;
    public static final int ENFILE = 23;
    public static final int ENOBUFS = 105;
    public static final int ENOMEM = 12;
    public static final int MFD_CLOEXEC = 1;
    public static final int PROT_READ = 1;
    public static final int PROT_WRITE = 2;
    public static final int MAP_SHARED = 1;
    public static final int EFD_NONBLOCK = 0x800;
    public static final int EFD_CLOEXEC = 0x80000;
    public static final long MAP_FAILED = -1L;

    public static final long MSGHDR_BYTES = 56;
    public static final long CMSG_HEADER_BYTES = 16;
    public static final long POLLFD_BYTES = 8;
    public static final int SOCKADDR_UN_BYTES = 110;

    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private static final MethodHandle SOCKET = bind("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle BIND = bind("bind", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle LISTEN = bind("listen", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle ACCEPT4 = bind("accept4", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    private static final MethodHandle CONNECT = bind("connect", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle SENDMSG = bind("sendmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle RECVMSG = bind("recvmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle CLOSE = bind("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle POLL = bind("poll", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    private static final MethodHandle GETSOCKOPT = bind("getsockopt", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle MEMFD_CREATE = bind("memfd_create", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle FTRUNCATE = bind("ftruncate", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MMAP = bind("mmap", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MUNMAP = bind("munmap", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle EVENTFD = bind("eventfd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle WRITE = bind("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle READ = bind("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle GETPID = Linker.nativeLinker().downcallHandle(Linker.nativeLinker().defaultLookup().find("getpid").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle GETEUID = Linker.nativeLinker().downcallHandle(Linker.nativeLinker().defaultLookup().find("geteuid").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle STRERROR = Linker.nativeLinker().downcallHandle(Linker.nativeLinker().defaultLookup().find("strerror").orElseThrow(),
            FunctionDescriptor.of(ADDRESS, JAVA_INT));

    private Posix()
    {
    }

    @SuppressWarnings("restricted")
    private static MethodHandle bind(String name, FunctionDescriptor descriptor)
    {
        return Linker.nativeLinker().downcallHandle(Linker.nativeLinker().defaultLookup().find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("libc lacks " + name + "; glibc 2.27 or newer is required")), descriptor, CAPTURE_ERRNO);
    }

    /**
     * Where a thread's calls leave {@code errno}: one per thread that makes calls, reused.
     */
    public static final class Errno
    {
        final MemorySegment state;
        private int last;

        /** @param arena holds the capture segment as long as the errno is used. */
        public Errno(Arena arena)
        {
            this.state = arena.allocate(CAPTURE);
        }

        /** @return the errno of the last call that failed. */
        public int last()
        {
            return last;
        }

        int capture()
        {
            last = (int) ERRNO.get(state, 0L);
            return last;
        }
    }

    private static AssertionError bug(Throwable t)
    {
        return new AssertionError("a libc downcall failed in Java: " + t, t);
    }

    /** @return the C library's text for an errno. */
    @SuppressWarnings("restricted")
    public static String strerror(int errno)
    {
        try {
            MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
            return text.reinterpret(512).getString(0);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int getpid()
    {
        try {
            return (int) GETPID.invokeExact();
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /** @return the effective user id of this process. */
    public static int geteuid()
    {
        try {
            return (int) GETEUID.invokeExact();
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    private static int result(int rc, Errno errno)
    {
        if (rc < 0) {
            errno.capture();
        }
        return rc;
    }

    private static long result(long rc, Errno errno)
    {
        if (rc < 0) {
            errno.capture();
        }
        return rc;
    }

    public static int socket(int domain, int type, int protocol, Errno errno)
    {
        try {
            return result((int) SOCKET.invokeExact(errno.state, domain, type, protocol), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /**
     * Writes an abstract-namespace {@code sockaddr_un} (a leading NUL, then the name: nothing on the
     * file system to clean up).
     *
     * @return the address length to pass.
     */
    public static int abstractAddress(MemorySegment address, byte[] name)
    {
        if (name.length > 100) {
            throw new IllegalArgumentException("socket name of " + name.length + " bytes exceeds 100");
        }
        address.fill((byte) 0);
        address.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 0, (short) AF_UNIX);
        MemorySegment.copy(name, 0, address, java.lang.foreign.ValueLayout.JAVA_BYTE, 3, name.length);
        return 3 + name.length;
    }

    public static int bind(int fd, MemorySegment address, int length, Errno errno)
    {
        try {
            return result((int) BIND.invokeExact(errno.state, fd, address.address(), length), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int listen(int fd, int backlog, Errno errno)
    {
        try {
            return result((int) LISTEN.invokeExact(errno.state, fd, backlog), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int accept4(int fd, int flags, Errno errno)
    {
        try {
            return result((int) ACCEPT4.invokeExact(errno.state, fd, 0L, 0L, flags), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int connect(int fd, MemorySegment address, int length, Errno errno)
    {
        try {
            return result((int) CONNECT.invokeExact(errno.state, fd, address.address(), length), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static long sendmsg(int fd, long msghdr, int flags, Errno errno)
    {
        try {
            return result((long) SENDMSG.invokeExact(errno.state, fd, msghdr, flags), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static long recvmsg(int fd, long msghdr, int flags, Errno errno)
    {
        try {
            return result((long) RECVMSG.invokeExact(errno.state, fd, msghdr, flags), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int close(int fd, Errno errno)
    {
        try {
            return result((int) CLOSE.invokeExact(errno.state, fd), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int poll(long fds, long count, int timeoutMillis, Errno errno)
    {
        try {
            return result((int) POLL.invokeExact(errno.state, fds, count, timeoutMillis), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /**
     * Reads the peer's process and user id of a connected Unix socket ({@code SO_PEERCRED}), which
     * the kernel recorded when the connection was made and the peer cannot forge.
     *
     * @param credentials receives the pid at index 0 and the uid at index 1; -1 each on failure.
     * @param scratch 16 bytes of native memory, reused by the caller.
     * @return 0, or -1 (errno in {@code errno}).
     */
    public static int peerCredentials(int fd, int[] credentials, MemorySegment scratch, Errno errno)
    {
        try {
            scratch.set(JAVA_INT, 12, 12);
            int rc = result((int) GETSOCKOPT.invokeExact(errno.state, fd, SOL_SOCKET, SO_PEERCRED, scratch.address(), scratch.address() + 12), errno);
            credentials[0] = rc < 0 ? -1 : scratch.get(JAVA_INT, 0);
            credentials[1] = rc < 0 ? -1 : scratch.get(JAVA_INT, 4);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int memfdCreate(String name, Errno errno)
    {
        try (Arena arena = Arena.ofConfined()) {
            return result((int) MEMFD_CREATE.invokeExact(errno.state, arena.allocateFrom(name).address(), MFD_CLOEXEC), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int ftruncate(int fd, long bytes, Errno errno)
    {
        try {
            return result((int) FTRUNCATE.invokeExact(errno.state, fd, bytes), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /** Maps a whole shared file read-write; returns {@link #MAP_FAILED} on failure. */
    public static long mmapShared(int fd, long bytes, Errno errno)
    {
        try {
            return result((long) MMAP.invokeExact(errno.state, 0L, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0L), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int munmap(long address, long bytes, Errno errno)
    {
        try {
            return result((int) MUNMAP.invokeExact(errno.state, address, bytes), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int eventfd(Errno errno)
    {
        try {
            return result((int) EVENTFD.invokeExact(errno.state, 0, EFD_NONBLOCK | EFD_CLOEXEC), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static long write(int fd, long buffer, long bytes, Errno errno)
    {
        try {
            return result((long) WRITE.invokeExact(errno.state, fd, buffer, bytes), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static long read(int fd, long buffer, long bytes, Errno errno)
    {
        try {
            return result((long) READ.invokeExact(errno.state, fd, buffer, bytes), errno);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }
}
