package io.kvbridge.backend.cudaipc;

import io.kvbridge.backend.cudaipc.ControlAdmission.Pending;
import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcSockets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listening socket of a control channel and the connections it accepted that have not
 * authenticated yet ({@link ControlAdmission}). When {@code accept} fails for want of descriptors
 * ({@code EMFILE}, {@code ENFILE}, {@code ENOBUFS}, {@code ENOMEM}) the oldest pending connection is
 * shed and the listener rests, 10 ms doubling to 1 s while it lasts, so the loop neither spins on a
 * listener that stays readable nor stops serving the connections it holds.
 *
 * <p>Threads: the control channel's thread; {@link #shed()} from any.
 */
final class ControlListener
{
    private static final Logger LOG = LoggerFactory.getLogger(ControlListener.class);
    private static final int ACCEPTS_PER_ROUND = 256;
    private static final long MIN_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(1);

    final ControlAdmission admission = new ControlAdmission();
    private final String description;
    private final int listenFd;
    private final AtomicLong shed = new AtomicLong();
    private final int[] credentials = new int[2];
    private long backoffNanos;
    private long pausedUntil;
    private boolean paused;

    ControlListener(String description, int listenFd)
    {
        this.description = description;
        this.listenFd = listenFd;
    }

    /** Closes the pending connections whose deadline passed, and ends a pause that is over. */
    void expire(Wire wire, long nowNanos)
    {
        for (Pending late : admission.expired(nowNanos)) {
            drop(wire, late);
        }
        paused = paused && nowNanos - pausedUntil < 0;
    }

    /** @return the descriptor to poll: the listener, or -1 (which poll skips) while it rests. */
    int pollFd()
    {
        return paused ? -1 : listenFd;
    }

    /** @return how long the next poll may wait: no longer than the rest of a pause. */
    int pollMillis(long nowNanos, int idleMillis)
    {
        return paused ? (int) Math.max(1, Math.min(idleMillis, TimeUnit.NANOSECONDS.toMillis(pausedUntil - nowNanos) + 1)) : idleMillis;
    }

    /** Accepts what waits, up to a round's worth, each as a pending connection. */
    void accept(Wire wire)
    {
        for (int n = 0; n < ACCEPTS_PER_ROUND && !paused; n++) {
            int fd = LibcSockets.accept4(listenFd, LibcSockets.SOCK_NONBLOCK | LibcSockets.SOCK_CLOEXEC, wire.errno);
            if (fd < 0) {
                int errno = wire.errno.last();
                if (errno == Errno.EMFILE || errno == Errno.ENFILE || errno == Errno.ENOBUFS || errno == Errno.ENOMEM) {
                    outOfDescriptors(wire, errno);
                }
                return;
            }
            backoffNanos = 0;
            LibcSockets.peerCredentials(fd, credentials, wire.scratch, wire.errno);
            for (Pending displaced : admission.admit(new Pending(fd, credentials[0], credentials[1], System.nanoTime()))) {
                drop(wire, displaced);
            }
        }
    }

    private void outOfDescriptors(Wire wire, int errno)
    {
        Pending oldest = admission.shedOldest();
        if (oldest != null) {
            drop(wire, oldest);
        }
        boolean first = backoffNanos == 0;
        backoffNanos = first ? MIN_BACKOFF_NANOS : Math.min(MAX_BACKOFF_NANOS, backoffNanos * 2);
        paused = true;
        pausedUntil = System.nanoTime() + backoffNanos;
        if (first) {
            LOG.warn("{}: accepting a control connection failed with errno {} ({}); shedding unauthenticated connections and pausing the listener "
                    + "up to {} ms at a time; raise the process's descriptor limit (ulimit -n) if peers are refused", description, errno, Libc.strerror(errno),
                    TimeUnit.NANOSECONDS.toMillis(MAX_BACKOFF_NANOS));
        }
    }

    /** Closes a pending connection that went silent, was displaced or hung up, and counts it. */
    void drop(Wire wire, Pending connection)
    {
        admission.remove(connection);
        shed.incrementAndGet();
        Libc.close(connection.fd, wire.errno);
    }

    /** @return connections closed for not authenticating in time, displaced by newer ones, or gone before authenticating. */
    long shed()
    {
        return shed.get();
    }

    /** Closes the listener and every pending connection. */
    void close(Wire wire)
    {
        for (Pending connection : admission.all()) {
            Libc.close(connection.fd, wire.errno);
        }
        Libc.close(listenFd, wire.errno);
    }
}
