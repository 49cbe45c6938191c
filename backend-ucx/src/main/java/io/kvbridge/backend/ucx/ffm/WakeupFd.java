package io.kvbridge.backend.ucx.ffm;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Lets a worker's owner thread sleep until UCX has an event or another thread has work for it.
 * The owner polls two descriptors: the worker's event descriptor and a private Linux
 * {@code eventfd} that {@link #signal()} writes. Signalling touches no UCX state, so callers on
 * other threads never use the single-threaded worker.
 */
public final class WakeupFd implements AutoCloseable
{
    // the 8-byte counter increment write() sends; shared by every instance, never changed
    private static final MemorySegment ONE = Arena.global().allocate(JAVA_LONG);

    static {
        ONE.set(JAVA_LONG, 0, 1L);
    }

    private final Arena arena = Arena.ofShared();
    private final MemorySegment pollSet;
    private final MemorySegment drainBuffer;
    // one errno per thread that calls: the owner's for await, the lock holder's for signal and close
    private final Errno ownerErrno;
    private final Errno lockedErrno;
    private final int fd;
    private boolean closed;

    /** Creates the eventfd; must be called on the owner thread. */
    public WakeupFd()
    {
        ownerErrno = new Errno(arena);
        lockedErrno = new Errno(arena);
        fd = Libc.eventfd(ownerErrno);
        if (fd < 0) {
            arena.close();
            throw ownerErrno.failure(ErrorCode.NATIVE_ERROR, "eventfd", "creating the UCX worker's wake-up descriptor; the process may be out of file "
                    + "descriptors (raise ulimit -n)");
        }
        pollSet = arena.allocate(Libc.POLLFD_BYTES * 2, 8);
        drainBuffer = arena.allocate(JAVA_LONG);
    }

    /** Wakes the owner thread if it sleeps in {@link #await}; callable from any thread, a no-op once closed. */
    public synchronized void signal()
    {
        // the lock keeps a late signal from writing to a descriptor number close() gave back
        if (closed) {
            return;
        }
        long written = Libc.write(fd, ONE.address(), 8L, lockedErrno);
        // a full counter (written < 0, EAGAIN) already wakes the poller: nothing is lost
        assert written == 8 || written < 0;
    }

    /**
     * Sleeps until the UCX descriptor or this eventfd is readable, or the timeout passes, then
     * clears this eventfd. Arm the worker first.
     *
     * @param workerFd from {@link UcpWorker#workerEventFd}, or -1 to sleep on the eventfd alone (poll ignores it).
     * @param timeoutMillis the longest sleep.
     */
    public void await(int workerFd, int timeoutMillis)
    {
        long second = Libc.POLLFD_BYTES;
        pollSet.set(JAVA_INT, 0, workerFd);
        pollSet.set(JAVA_SHORT, Libc.POLLFD_EVENTS, Libc.POLLIN);
        pollSet.set(JAVA_SHORT, Libc.POLLFD_REVENTS, (short) 0);
        pollSet.set(JAVA_INT, second, fd);
        pollSet.set(JAVA_SHORT, second + Libc.POLLFD_EVENTS, Libc.POLLIN);
        pollSet.set(JAVA_SHORT, second + Libc.POLLFD_REVENTS, (short) 0);
        // an interrupted poll (-1, EINTR) is an early wake-up, which the caller tolerates
        int ready = Libc.poll(pollSet.address(), 2L, timeoutMillis, ownerErrno);
        if (ready > 0 && (pollSet.get(JAVA_SHORT, second + Libc.POLLFD_REVENTS) & Libc.POLLIN) != 0) {
            long read = Libc.read(fd, drainBuffer.address(), 8L, ownerErrno);
            assert read == 8 || read < 0;
        }
    }

    /** Closes the eventfd; call on the owner thread after the last {@link #signal()} can happen. */
    @Override
    public synchronized void close()
    {
        if (closed) {
            return;
        }
        closed = true;
        try {
            int result = Libc.close(fd, lockedErrno);
            assert result == 0 : "close(" + fd + "): " + Errno.describe(lockedErrno.last());
        }
        finally {
            arena.close();
        }
    }
}
