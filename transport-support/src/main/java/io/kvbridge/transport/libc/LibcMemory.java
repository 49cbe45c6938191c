package io.kvbridge.transport.libc;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.invoke.MethodHandle;

/**
 * Memory another process can map through the C library: an anonymous {@code memfd}, sized with
 * {@code ftruncate} and mapped {@code MAP_SHARED}; its descriptor is what crosses to the other
 * process. Calls take the caller's {@link Errno} as {@link Libc}'s do.
 */
public final class LibcMemory
{
    /** Protection: readable. */
    public static final int PROT_READ = 1;
    /** Protection: writable. */
    public static final int PROT_WRITE = 2;
    /** Mapping flag: writes reach the file and every other mapping of it. */
    public static final int MAP_SHARED = 1;
    /** Mapping flag: exactly at the address, failing with {@code EEXIST} where anything is mapped (Linux 4.17). */
    public static final int MAP_FIXED_NOREPLACE = 0x100000;
    /** What {@code mmap} returns on failure. */
    public static final long MAP_FAILED = -1L;
    /** {@code memfd_create} flag: close on exec. */
    public static final int MFD_CLOEXEC = 1;

    private static final MethodHandle MEMFD_CREATE = Downcalls.capturing("memfd_create", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle FTRUNCATE = Downcalls.capturing("ftruncate", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MMAP = Downcalls.capturing("mmap", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT,
            JAVA_LONG));
    private static final MethodHandle MUNMAP = Downcalls.capturing("munmap", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));

    private LibcMemory()
    {
    }

    /**
     * Creates an anonymous, close-on-exec memory file; allocates the name's C string.
     *
     * @param name shown in {@code /proc/PID/fd} and {@code /proc/PID/maps}, for people looking.
     * @param errno receives errno on failure.
     * @return the descriptor, or -1.
     */
    public static int memfdCreate(String name, Errno errno)
    {
        try (Arena arena = Arena.ofConfined()) {
            return errno.result((int) MEMFD_CREATE.invokeExact(errno.state, arena.allocateFrom(name).address(), MFD_CLOEXEC));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Sets a file's length.
     *
     * @param fd the file.
     * @param bytes the new length.
     * @param errno receives errno on failure.
     * @return 0, or -1.
     */
    public static int ftruncate(int fd, long bytes, Errno errno)
    {
        try {
            return errno.result((int) FTRUNCATE.invokeExact(errno.state, fd, bytes));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Maps a file.
     *
     * @param address where, or 0 for anywhere (a hint unless {@code flags} say otherwise).
     * @param bytes how many.
     * @param protection such as {@link #PROT_READ} | {@link #PROT_WRITE}.
     * @param flags such as {@link #MAP_SHARED}.
     * @param fd the file.
     * @param offset the file offset, page-aligned.
     * @param errno receives errno on failure.
     * @return the address mapped, or {@link #MAP_FAILED}.
     */
    public static long mmap(long address, long bytes, int protection, int flags, int fd, long offset, Errno errno)
    {
        try {
            long mapped = (long) MMAP.invokeExact(errno.state, address, bytes, protection, flags, fd, offset);
            if (mapped == MAP_FAILED) {
                errno.capture();
            }
            return mapped;
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Maps a whole file shared, read-write, wherever the kernel chooses.
     *
     * @param fd the file.
     * @param bytes its length.
     * @param errno receives errno on failure.
     * @return the address, or {@link #MAP_FAILED}.
     */
    public static long mmapShared(int fd, long bytes, Errno errno)
    {
        return mmap(0L, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0L, errno);
    }

    /**
     * Removes a mapping.
     *
     * @param address its start.
     * @param bytes its length.
     * @param errno receives errno on failure.
     * @return 0, or -1.
     */
    public static int munmap(long address, long bytes, Errno errno)
    {
        try {
            return errno.result((int) MUNMAP.invokeExact(errno.state, address, bytes));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }
}
