package io.kvbridge.transport.libc;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The C library's descriptor, process and stream calls that the JDK has no API for, bound once for
 * every transport, the testkit and the CLI: {@code close}, {@code read}, {@code write},
 * {@code poll}, {@code eventfd}, {@code open}, {@code isatty}, {@code setenv}, the
 * {@code open_memstream} stream a library prints into, {@code free}, and the process ids. Sockets
 * are in {@link LibcSockets}, shared memory in {@link LibcMemory}.
 *
 * <p>A call that can fail takes the caller's {@link Errno}, returns the C result unchanged and
 * leaves errno in it when the result is negative; nothing allocates unless a string crosses.
 * Pointers travel as {@code long}. Threads: any, each with its own {@link Errno}.
 */
public final class Libc
{
    /** {@code poll} event: data to read. */
    public static final short POLLIN = 0x1;
    /** {@code poll} event: an error on the descriptor. */
    public static final short POLLERR = 0x8;
    /** {@code poll} event: the peer hung up. */
    public static final short POLLHUP = 0x10;
    /** {@code poll} event: the descriptor is not open. */
    public static final short POLLNVAL = 0x20;
    /** Bytes of one {@code struct pollfd}: {@code int fd}, {@code short events}, {@code short revents}. */
    public static final long POLLFD_BYTES = 8;
    /** Offset of {@code events} in {@code struct pollfd}. */
    public static final long POLLFD_EVENTS = 4;
    /** Offset of {@code revents} in {@code struct pollfd}. */
    public static final long POLLFD_REVENTS = 6;
    /** {@code open} flag: read and write. */
    public static final int O_RDWR = 2;
    /** {@code open} flag: close on exec. */
    public static final int O_CLOEXEC = 0x80000;
    /** The standard error descriptor. */
    public static final int STDERR = 2;

    private static final int EFD_NONBLOCK = 0x800;
    private static final int EFD_CLOEXEC = 0x80000;

    private static final MethodHandle CLOSE = Downcalls.capturing("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle READ = Downcalls.capturing("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle WRITE = Downcalls.capturing("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle POLL = Downcalls.capturing("poll", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    private static final MethodHandle EVENTFD = Downcalls.capturing("eventfd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle OPEN = Downcalls.capturing("open", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT),
            java.lang.foreign.Linker.Option.firstVariadicArg(2));
    private static final MethodHandle ISATTY = Downcalls.capturing("isatty", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle SETENV = Downcalls.capturing("setenv", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    private static final MethodHandle OPEN_MEMSTREAM = Downcalls.capturing("open_memstream", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle FCLOSE = Downcalls.capturing("fclose", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    private static final MethodHandle FREE = Downcalls.plain("free", FunctionDescriptor.ofVoid(JAVA_LONG));
    private static final MethodHandle GETPID = Downcalls.plain("getpid", FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle GETEUID = Downcalls.plain("geteuid", FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle STRERROR = Downcalls.plain("strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT));

    private Libc()
    {
    }

    /**
     * Closes a descriptor.
     *
     * @param fd the descriptor.
     * @param errno receives errno on failure ({@code EBADF} for one not open).
     * @return 0, or -1.
     */
    public static int close(int fd, Errno errno)
    {
        try {
            return errno.result((int) CLOSE.invokeExact(errno.state, fd));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Reads up to {@code bytes} bytes into native memory.
     *
     * @param fd the descriptor.
     * @param buffer the address to read into.
     * @param bytes the most to read.
     * @param errno receives errno on failure.
     * @return bytes read, 0 at end of file, or -1.
     */
    public static long read(int fd, long buffer, long bytes, Errno errno)
    {
        try {
            return errno.result((long) READ.invokeExact(errno.state, fd, buffer, bytes));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Writes up to {@code bytes} bytes from native memory.
     *
     * @param fd the descriptor.
     * @param buffer the address to write from.
     * @param bytes how many.
     * @param errno receives errno on failure.
     * @return bytes written, or -1.
     */
    public static long write(int fd, long buffer, long bytes, Errno errno)
    {
        try {
            return errno.result((long) WRITE.invokeExact(errno.state, fd, buffer, bytes));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Waits for events on descriptors.
     *
     * @param fds the address of {@code count} {@code struct pollfd}s ({@link #POLLFD_BYTES} each).
     * @param count how many.
     * @param timeoutMillis the longest wait; negative waits without end, so callers pass a deadline's rest.
     * @param errno receives errno on failure ({@code EINTR} for a signal: an early wake-up).
     * @return how many descriptors have events, 0 at the timeout, or -1.
     */
    public static int poll(long fds, long count, int timeoutMillis, Errno errno)
    {
        try {
            return errno.result((int) POLL.invokeExact(errno.state, fds, count, timeoutMillis));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Creates a non-blocking, close-on-exec Linux {@code eventfd} at 0: a counter one thread writes
     * to wake another polling it.
     *
     * @param errno receives errno on failure ({@code EMFILE}: out of descriptors).
     * @return the descriptor, or -1.
     */
    public static int eventfd(Errno errno)
    {
        try {
            return errno.result((int) EVENTFD.invokeExact(errno.state, 0, EFD_NONBLOCK | EFD_CLOEXEC));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Opens a file; allocates the path's C string, so not for hot paths.
     *
     * @param path the file.
     * @param flags such as {@link #O_RDWR} | {@link #O_CLOEXEC}.
     * @param errno receives errno on failure.
     * @return the descriptor, or -1.
     */
    public static int open(String path, int flags, Errno errno)
    {
        try (Arena arena = Arena.ofConfined()) {
            return errno.result((int) OPEN.invokeExact(errno.state, arena.allocateFrom(path).address(), flags, 0));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Tells whether a descriptor is a terminal.
     *
     * @param fd the descriptor, such as {@link #STDERR}.
     * @param errno receives errno when it is not ({@code ENOTTY}, or {@code EBADF} for one not open).
     * @return 1 for a terminal, else 0.
     */
    public static int isatty(int fd, Errno errno)
    {
        try {
            int rc = (int) ISATTY.invokeExact(errno.state, fd);
            if (rc != 1) {
                errno.capture();
            }
            return rc;
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Sets a variable of the C environment, which native libraries read (the JDK's
     * {@link System#getenv} copy is not changed).
     *
     * @param name the variable.
     * @param value its value.
     * @param errno receives errno on failure.
     * @return 0, or -1.
     */
    public static int setenv(String name, String value, Errno errno)
    {
        try (Arena arena = Arena.ofConfined()) {
            return errno.result((int) SETENV.invokeExact(errno.state, arena.allocateFrom(name).address(), arena.allocateFrom(value).address(), 1));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Opens a {@code FILE*} that writes into a growing buffer, for a library that prints.
     *
     * @param bufferOut where the buffer's address is stored at {@link #fclose}; {@link #free} it then.
     * @param sizeOut where its length is stored.
     * @param errno receives errno on failure.
     * @return the stream, or 0.
     */
    public static long openMemstream(long bufferOut, long sizeOut, Errno errno)
    {
        try {
            long stream = (long) OPEN_MEMSTREAM.invokeExact(errno.state, bufferOut, sizeOut);
            if (stream == 0) {
                errno.capture();
            }
            return stream;
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Closes a stream.
     *
     * @param stream from {@link #openMemstream}.
     * @param errno receives errno on failure.
     * @return 0, or -1 ({@code EOF}).
     */
    public static int fclose(long stream, Errno errno)
    {
        try {
            return errno.result((int) FCLOSE.invokeExact(errno.state, stream));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Frees what the C library (or a library using its {@code malloc}) allocated.
     *
     * @param pointer the address; 0 is ignored, as by C.
     */
    public static void free(long pointer)
    {
        try {
            FREE.invokeExact(pointer);
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /** {@return this process's id} */
    public static int getpid()
    {
        try {
            return (int) GETPID.invokeExact();
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /** {@return the effective user id of this process} */
    public static int geteuid()
    {
        try {
            return (int) GETEUID.invokeExact();
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Returns the C library's text for an errno.
     *
     * @param errno the number.
     * @return such as {@code Bad file descriptor}.
     */
    @SuppressWarnings("restricted")
    public static String strerror(int errno)
    {
        try {
            MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
            return text.reinterpret(512).getString(0);
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }
}
