package io.kvbridge.backend.ucx.ffm;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
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
    private static final int EFD_NONBLOCK = 0x800;
    private static final int EFD_CLOEXEC = 0x80000;
    private static final short POLLIN = 1;
    // the 8-byte counter increment write() sends; shared by every instance, never changed
    private static final MemorySegment ONE = Arena.global().allocate(JAVA_LONG);

    static {
        ONE.set(JAVA_LONG, 0, 1L);
    }

    private final Arena arena = Arena.ofShared();
    private final MemorySegment pollSet;
    private final MemorySegment drainBuffer;
    private final int fd;
    private boolean closed;

    /** Creates the eventfd; must be called on the owner thread. */
    public WakeupFd()
    {
        try {
            fd = (int) UcpNative.EVENTFD.invokeExact(0, EFD_NONBLOCK | EFD_CLOEXEC);
        }
        catch (Throwable e) {
            arena.close();
            throw new AssertionError("eventfd call failed unexpectedly: " + e, e);
        }
        if (fd < 0) {
            arena.close();
            throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "eventfd failed; the process may be out of file descriptors (ulimit -n)");
        }
        pollSet = arena.allocate(UcpLayouts.POLLFD, 2);
        drainBuffer = arena.allocate(JAVA_LONG);
    }

    /** Wakes the owner thread if it sleeps in {@link #await}; callable from any thread, a no-op once closed. */
    public synchronized void signal()
    {
        // the lock keeps a late signal from writing to a descriptor number close() gave back
        if (closed) {
            return;
        }
        try {
            long written = (long) UcpNative.WRITE.invokeExact(fd, ONE.address(), 8L);
            // a full counter (written < 0, EAGAIN) already wakes the poller: nothing is lost
            assert written == 8 || written < 0;
        }
        catch (Throwable e) {
            throw new AssertionError("eventfd write failed unexpectedly: " + e, e);
        }
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
        long second = UcpLayouts.POLLFD.byteSize();
        pollSet.set(JAVA_INT, UcpLayouts.POLLFD_FD, workerFd);
        pollSet.set(JAVA_SHORT, UcpLayouts.POLLFD_EVENTS, POLLIN);
        pollSet.set(JAVA_SHORT, UcpLayouts.POLLFD_REVENTS, (short) 0);
        pollSet.set(JAVA_INT, second + UcpLayouts.POLLFD_FD, fd);
        pollSet.set(JAVA_SHORT, second + UcpLayouts.POLLFD_EVENTS, POLLIN);
        pollSet.set(JAVA_SHORT, second + UcpLayouts.POLLFD_REVENTS, (short) 0);
        try {
            // an interrupted poll (-1, EINTR) is an early wake-up, which the caller tolerates
            int ready = (int) UcpNative.POLL.invokeExact(pollSet.address(), 2L, timeoutMillis);
            if (ready > 0 && (pollSet.get(JAVA_SHORT, second + UcpLayouts.POLLFD_REVENTS) & POLLIN) != 0) {
                long read = (long) UcpNative.READ.invokeExact(fd, drainBuffer.address(), 8L);
                assert read == 8 || read < 0;
            }
        }
        catch (Throwable e) {
            throw new AssertionError("poll failed unexpectedly: " + e, e);
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
            int result = (int) UcpNative.CLOSE.invokeExact(fd);
            assert result == 0;
        }
        catch (Throwable e) {
            throw new AssertionError("close failed unexpectedly: " + e, e);
        }
        finally {
            arena.close();
        }
    }
}
