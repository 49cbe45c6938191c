package io.kvbridge.transport.libc;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;

/**
 * Where a thread's libc calls leave {@code errno}: every binding in this package captures it with
 * {@code Linker.Option.captureCallState("errno")} into the segment of the {@link Errno} passed to
 * the call, and a failed call (a negative result) copies it into {@link #last()}. One instance per
 * thread that makes calls, reused: a call allocates nothing.
 *
 * <p>Threads: not thread-safe; one thread at a time, or calls under one lock.
 */
public final class Errno
{
    /** {@code EPERM}: not permitted. */
    public static final int EPERM = 1;
    /** {@code ENOENT}: no such file. */
    public static final int ENOENT = 2;
    /** {@code EINTR}: a signal interrupted the call. */
    public static final int EINTR = 4;
    /** {@code EBADF}: the descriptor is not open. */
    public static final int EBADF = 9;
    /** {@code EAGAIN}: it would block; try again. */
    public static final int EAGAIN = 11;
    /** {@code ENOMEM}: out of memory. */
    public static final int ENOMEM = 12;
    /** {@code EACCES}: permission denied. */
    public static final int EACCES = 13;
    /** {@code EEXIST}: already exists (or, for {@code MAP_FIXED_NOREPLACE}, already mapped). */
    public static final int EEXIST = 17;
    /** {@code EINVAL}: an invalid argument. */
    public static final int EINVAL = 22;
    /** {@code ENFILE}: the system is out of descriptors. */
    public static final int ENFILE = 23;
    /** {@code EMFILE}: the process is out of descriptors ({@code ulimit -n}). */
    public static final int EMFILE = 24;
    /** {@code ENOTTY}: not a terminal. */
    public static final int ENOTTY = 25;
    /** {@code EPIPE}: the peer closed. */
    public static final int EPIPE = 32;
    /** {@code ENOBUFS}: out of buffer space. */
    public static final int ENOBUFS = 105;
    /** {@code ECONNREFUSED}: nobody listens there. */
    public static final int ECONNREFUSED = 111;

    static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    // Linux's numbers (x86-64 and aarch64 share them), as the C headers name them
    private static final String[] NAMES = {
        null, "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
        "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV", "ENOTDIR",
        "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC", "ESPIPE", "EROFS",
        "EMLINK", "EPIPE", "EDOM", "ERANGE", "EDEADLK", "ENAMETOOLONG", "ENOLCK", "ENOSYS", "ENOTEMPTY", "ELOOP",
    };
    private static final String[] NETWORK_NAMES = {
        "ENOTSOCK", "EDESTADDRREQ", "EMSGSIZE", "EPROTOTYPE", "ENOPROTOOPT", "EPROTONOSUPPORT", "ESOCKTNOSUPPORT",
        "EOPNOTSUPP", "EPFNOSUPPORT", "EAFNOSUPPORT", "EADDRINUSE", "EADDRNOTAVAIL", "ENETDOWN", "ENETUNREACH",
        "ENETRESET", "ECONNABORTED", "ECONNRESET", "ENOBUFS", "EISCONN", "ENOTCONN", "ESHUTDOWN", "ETOOMANYREFS",
        "ETIMEDOUT", "ECONNREFUSED", "EHOSTDOWN", "EHOSTUNREACH", "EALREADY", "EINPROGRESS",
    };
    private static final int FIRST_NETWORK = 88;

    final MemorySegment state;
    private int last;

    /**
     * Creates the capture state.
     *
     * @param arena holds the state as long as calls use it.
     */
    public Errno(Arena arena)
    {
        this.state = arena.allocate(CAPTURE);
    }

    /** {@return the errno of the last call that failed, 0 before any} */
    public int last()
    {
        return last;
    }

    /** Copies the captured errno after a failed call; returns it. */
    int capture()
    {
        last = (int) ERRNO.get(state, 0L);
        return last;
    }

    int result(int rc)
    {
        if (rc < 0) {
            capture();
        }
        return rc;
    }

    long result(long rc)
    {
        if (rc < 0) {
            capture();
        }
        return rc;
    }

    /**
     * Names an errno as the C headers do.
     *
     * @param errno the number.
     * @return such as {@code EBADF}, or {@code errno N} for one this table does not know.
     */
    public static String name(int errno)
    {
        if (errno > 0 && errno < NAMES.length) {
            return NAMES[errno];
        }
        if (errno >= FIRST_NETWORK && errno < FIRST_NETWORK + NETWORK_NAMES.length) {
            return NETWORK_NAMES[errno - FIRST_NETWORK];
        }
        return "errno " + errno;
    }

    /**
     * Describes an errno by name and the C library's text.
     *
     * @param errno the number.
     * @return such as {@code EBADF: Bad file descriptor}.
     */
    public static String describe(int errno)
    {
        return name(errno) + ": " + Libc.strerror(errno);
    }

    /**
     * Makes the last failure a typed error, worded like every native failure
     * ({@link NativeLibrary#failure}).
     *
     * @param code the error code the caller's contract promises.
     * @param function the C function that failed.
     * @param context what was being done, with the values involved and the fix, or null.
     * @return the error: {@code function returned -1 (EBADF: Bad file descriptor) while context}.
     */
    public KvBridgeException failure(ErrorCode code, String function, String context)
    {
        return NativeLibrary.failure(code, function, -1, describe(last), context);
    }
}
