package io.kvbridge.backend.tcp;

import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * Which accepted connections the data port holds, in two pools, as the engine's side channel does,
 * so that sockets that never prove who they are cannot starve the ones that do. A new connection is
 * <i>pending</i> until its hello is verified; pending connections are bounded in total and per
 * source address, and the newest displaces the oldest (preferring one that has not sent a byte of
 * its hello), so a flood of idle sockets only churns itself while a peer that answers at once is
 * served. A pending connection holds no stream buffers, only its challenge and the hello it reads.
 * A verified connection is <i>established</i>: pending ones never displace it, and when
 * {@link #MAX_ESTABLISHED} are held a newly verified one is refused, not an older one cut off.
 *
 * <p>Threads: the owner thread only.
 */
final class TcpAdmission
{
    /** Connections waiting to prove who they are, held at once. */
    static final int MAX_PENDING = 256;
    /** Of those, from one source address. */
    static final int MAX_PENDING_PER_ADDRESS = 64;
    /** Verified connections held at once: each holds about 150 KiB of direct buffers. */
    static final int MAX_ESTABLISHED = 1024;
    private static final int VICTIM_CANDIDATES = 8;

    private final ArrayDeque<TargetConnection> pending = new ArrayDeque<>();
    private final Map<InetAddress, ArrayDeque<TargetConnection>> pendingByAddress = new HashMap<>();
    private int established;

    /**
     * Holds a new connection as pending.
     *
     * @return a pending connection it displaces, for the caller to close; null when there was room.
     */
    TargetConnection admit(TargetConnection connection)
    {
        TargetConnection displaced = null;
        ArrayDeque<TargetConnection> ofAddress = pendingByAddress.get(connection.address());
        if (ofAddress != null && ofAddress.size() >= MAX_PENDING_PER_ADDRESS) {
            displaced = victim(ofAddress);
        }
        else if (pending.size() >= MAX_PENDING) {
            displaced = victim(pending);
        }
        if (displaced != null) {
            removePending(displaced);
        }
        pending.addLast(connection);
        pendingByAddress.computeIfAbsent(connection.address(), ignored -> new ArrayDeque<>()).addLast(connection);
        return displaced;
    }

    /** The oldest of the first few that has not begun its hello, else the oldest: accepting stays cheap. */
    private static TargetConnection victim(ArrayDeque<TargetConnection> candidates)
    {
        int looked = 0;
        for (TargetConnection candidate : candidates) {
            if (looked++ == VICTIM_CANDIDATES) {
                break;
            }
            if (!candidate.helloBegun()) {
                return candidate;
            }
        }
        return candidates.peekFirst();
    }

    /**
     * Moves a pending connection whose hello was verified to the established pool.
     *
     * @return false when the established pool is full: the caller closes the connection.
     */
    boolean establish(TargetConnection connection)
    {
        removePending(connection);
        if (established >= MAX_ESTABLISHED) {
            return false;
        }
        established++;
        return true;
    }

    /** A connection closed: forget it, pending or established. */
    void closed(TargetConnection connection, boolean wasEstablished)
    {
        if (wasEstablished) {
            established--;
        }
        else {
            removePending(connection);
        }
    }

    private void removePending(TargetConnection connection)
    {
        if (!pending.remove(connection)) {
            return;
        }
        ArrayDeque<TargetConnection> ofAddress = pendingByAddress.get(connection.address());
        if (ofAddress != null) {
            ofAddress.remove(connection);
            if (ofAddress.isEmpty()) {
                pendingByAddress.remove(connection.address());
            }
        }
    }

    /** {@return the oldest pending connection, or null} */
    TargetConnection oldestPending()
    {
        return pending.peekFirst();
    }

    /** {@return pending connections, oldest first, for the sweep; do not change the pool while iterating} */
    Iterator<TargetConnection> pendingOldestFirst()
    {
        return pending.iterator();
    }

    int pendingCount()
    {
        return pending.size();
    }

    int establishedCount()
    {
        return established;
    }
}
