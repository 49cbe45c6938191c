package io.kvbridge.transport.libc;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Linux process descriptors ({@code pidfd_open}, glibc 2.36 or later): a descriptor that refers to
 * one process, not to whichever process later gets its pid, and polls readable once that process
 * exited. It is how a transport proves that a local peer process can no longer write anything.
 * Threads: any, each with its own {@link Errno}.
 */
public final class LibcProcesses
{
    private static final MethodHandle PIDFD_OPEN = Downcalls.capturing("pidfd_open", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));

    private LibcProcesses()
    {
    }

    /**
     * Opens a descriptor of a live process, close-on-exec (pidfds always are).
     *
     * @param pid the process.
     * @param errno receives errno on failure ({@code ESRCH}: no such process; {@code ENOSYS}: a kernel before 5.3).
     * @return the descriptor, or -1.
     */
    public static int pidfdOpen(int pid, Errno errno)
    {
        try {
            return errno.result((int) PIDFD_OPEN.invokeExact(errno.state, pid, 0));
        }
        catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * Whether the process of a pidfd exited, without waiting: its pidfd polls readable from the moment
     * every thread of it ended, whether or not anyone reaped it. Allocates one {@code pollfd}, so not
     * for hot paths.
     *
     * @param pidfd a descriptor from {@link #pidfdOpen}.
     * @param errno receives errno on failure.
     * @return 1 when it exited, 0 while it runs, or -1 (errno in {@code errno}; {@code EBADF} for a closed descriptor).
     */
    public static int exited(int pidfd, Errno errno)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pollfd = arena.allocate(Libc.POLLFD_BYTES, 8);
            pollfd.set(JAVA_INT, 0, pidfd);
            pollfd.set(JAVA_SHORT, Libc.POLLFD_EVENTS, Libc.POLLIN);
            int ready = Libc.poll(pollfd.address(), 1, 0, errno);
            if (ready < 0) {
                return -1;
            }
            short events = pollfd.get(JAVA_SHORT, Libc.POLLFD_REVENTS);
            if ((events & Libc.POLLNVAL) != 0) {
                return -1;
            }
            return (events & Libc.POLLIN) != 0 ? 1 : 0;
        }
    }
}
