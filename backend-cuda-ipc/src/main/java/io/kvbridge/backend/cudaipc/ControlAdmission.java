package io.kvbridge.backend.cudaipc;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The control socket's connections that have not authenticated yet, bounded so that silent or
 * failing connections cannot starve the peers that authenticate: at most {@link #MAX_PENDING} in
 * all, {@link #MAX_PENDING_PER_UID} per user and {@link #MAX_PENDING_PER_PID} per process (as the
 * kernel tells, {@code SO_PEERCRED}); the newest displaces one of its own process, else of its own
 * user's process that holds the most, else of the process that holds the most of all (its oldest,
 * preferring one that has not even said hello), and each has
 * {@link #DEADLINE_NANOS} to finish the handshake. A pending connection holds only its nonces:
 * nothing is allocated for it before it authenticates. Established connections live elsewhere and
 * are never displaced by pending ones.
 *
 * <p>Threads: the control channel's thread only.
 */
final class ControlAdmission
{
    static final int MAX_PENDING = 64;
    static final int MAX_PENDING_PER_UID = 32;
    static final int MAX_PENDING_PER_PID = 8;
    static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(5);

    /** One accepted connection that has not proved itself yet. */
    static final class Pending
    {
        final int fd;
        final int pid;
        final int uid;
        final long deadlineNanos;
        /** Set once its hello arrived and the challenge went out. */
        byte[] clientNonce;
        byte[] serverNonce;
        String agent;
        boolean primary;

        Pending(int fd, int pid, int uid, long nowNanos)
        {
            this.fd = fd;
            this.pid = pid;
            this.uid = uid;
            this.deadlineNanos = nowNanos + DEADLINE_NANOS;
        }

        boolean saidHello()
        {
            return agent != null;
        }
    }

    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private final Map<Integer, Integer> perUid = new HashMap<>();
    private final Map<Integer, Integer> perPid = new HashMap<>();

    /**
     * Admits a new connection.
     *
     * @return the connections it displaces, for the caller to close; usually none.
     */
    List<Pending> admit(Pending connection)
    {
        List<Pending> displaced = new ArrayList<>(1);
        if (perPid.getOrDefault(connection.pid, 0) >= MAX_PENDING_PER_PID) {
            displaced.add(remove(victim(connection.pid, -1)));
        }
        else if (perUid.getOrDefault(connection.uid, 0) >= MAX_PENDING_PER_UID) {
            displaced.add(remove(victim(-1, connection.uid)));
        }
        else if (pending.size() >= MAX_PENDING) {
            displaced.add(remove(victim(-1, -1)));
        }
        pending.addLast(connection);
        perPid.merge(connection.pid, 1, Integer::sum);
        perUid.merge(connection.uid, 1, Integer::sum);
        return displaced;
    }

    /**
     * The connection to displace from a process, of a user or of all (-1: any): of the process that
     * holds the most of them (the given one, if any), its oldest that has not said hello, else its
     * oldest. Taking from the busiest process keeps a flood from many processes of one user shedding
     * its own connections, not a peer's single one whose hello is not read yet.
     */
    private Pending victim(int pid, int uid)
    {
        int busiest = pid;
        if (busiest == -1) {
            int most = 0;
            for (Pending candidate : pending) {
                int held = perPid.getOrDefault(candidate.pid, 0);
                if ((uid == -1 || candidate.uid == uid) && held > most) {
                    most = held;
                    busiest = candidate.pid;
                }
            }
        }
        Pending oldest = null;
        for (Pending candidate : pending) {
            if (candidate.pid != busiest || (uid != -1 && candidate.uid != uid)) {
                continue;
            }
            if (!candidate.saidHello()) {
                return candidate;
            }
            if (oldest == null) {
                oldest = candidate;
            }
        }
        return oldest;
    }

    /** Forgets a connection (authenticated, refused or displaced); returns it. */
    Pending remove(Pending connection)
    {
        if (connection != null && pending.remove(connection)) {
            perPid.computeIfPresent(connection.pid, (k, v) -> v == 1 ? null : v - 1);
            perUid.computeIfPresent(connection.uid, (k, v) -> v == 1 ? null : v - 1);
        }
        return connection;
    }

    /** @return the connections whose deadline passed, removed. */
    List<Pending> expired(long nowNanos)
    {
        List<Pending> expired = null;
        for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
            Pending connection = it.next();
            if (nowNanos - connection.deadlineNanos > 0) {
                if (expired == null) {
                    expired = new ArrayList<>();
                }
                expired.add(connection);
            }
        }
        if (expired == null) {
            return List.of();
        }
        expired.forEach(this::remove);
        return expired;
    }

    /** @return the oldest pending connection of the process that holds the most, removed, to free its descriptor; null when none. */
    Pending shedOldest()
    {
        return remove(victim(-1, -1));
    }

    /** @return every pending connection, in accept order. */
    Iterable<Pending> all()
    {
        return pending;
    }

    int size()
    {
        return pending.size();
    }
}
