package io.kvbridge.core.sidechannel;

import java.util.function.BooleanSupplier;

/**
 * The side channel's accepted sockets whose descriptor is not released yet, bounded: the accept
 * thread takes a connection only below the bound. A displaced or refused connection releases its
 * descriptor when its reader, a virtual thread, next runs; on a busy machine that lags the accept
 * thread, and without the bound a flood would pile up descriptors beyond the admission's bounds.
 * While at the bound, new connections wait in the kernel's queue. Thread-safe.
 */
final class OpenSockets
{
    private static final long RECHECK_MILLIS = 10;

    private final int bound;
    private int open;

    /** @param bound the most sockets open at once: the admission's pending and served ones and room for those being closed. */
    OpenSockets(int bound)
    {
        this.bound = bound;
    }

    /**
     * Waits until a socket may be taken, each wait at most {@value #RECHECK_MILLIS} ms before it looks at
     * {@code stop} again, and counts it.
     *
     * @return false when {@code stop} ended the wait: nothing is counted.
     */
    synchronized boolean acquire(BooleanSupplier stop) throws InterruptedException
    {
        while (open >= bound) {
            if (stop.getAsBoolean()) {
                return false;
            }
            wait(RECHECK_MILLIS);
        }
        open++;
        return true;
    }

    /** A socket counted by {@link #acquire} is closed, or was never accepted. */
    synchronized void release()
    {
        open--;
        notifyAll();
    }
}
