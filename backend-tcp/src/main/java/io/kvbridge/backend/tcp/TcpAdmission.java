package io.kvbridge.backend.tcp;

import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * Which accepted connections the data port holds, in two pools, as the engine's side channel does,
 * so that sockets that never prove who they are cannot starve the ones that do. A new connection is
 * <i>pending</i> until its hello is verified; pending connections are bounded in total and per
 * source address, and the newest displaces the oldest (preferring one that has not sent a byte of
 * its hello), so a flood of idle sockets only churns itself while a peer that answers at once is
 * served. A pending connection holds no stream buffers, only its challenge and the hello it reads.
 * A verified connection is <i>established</i>: pending ones never displace it. When
 * {@link #MAX_ESTABLISHED} are held, a newly verified one displaces the oldest that has sent nothing
 * since its hello for longer than the connect timeout (a peer that connects to work sends its first
 * request at once; one that holds a verified connection idle holds a slot only), and is refused
 * when there is none, rather than a peer at work cut off.
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
    private final ArrayDeque<TargetConnection> established = new ArrayDeque<>();
    private final long idleGraceNanos;

    /** @param idleGraceNanos how long a verified connection may send nothing before a newcomer may displace it. */
    TcpAdmission(long idleGraceNanos)
    {
        this.idleGraceNanos = idleGraceNanos;
    }

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
     * @return the outcome: whether it was admitted, and an idle connection to close for it.
     */
    Promotion establish(TargetConnection connection)
    {
        removePending(connection);
        TargetConnection displaced = null;
        if (established.size() >= MAX_ESTABLISHED) {
            long now = System.nanoTime();
            for (TargetConnection candidate : established) {
                if (candidate.idleSinceHello(now, idleGraceNanos)) {
                    displaced = candidate;
                    break;
                }
            }
            if (displaced == null) {
                return new Promotion(false, null);
            }
            established.remove(displaced);
        }
        established.addLast(connection);
        return new Promotion(true, displaced);
    }

    /**
     * What establishing a connection decided.
     *
     * @param admitted whether it is established now; else the caller closes it.
     * @param displaced an established connection idle since its hello, to close for it, or null.
     */
    record Promotion(boolean admitted, TargetConnection displaced)
    {
    }

    /** A connection closed: forget it, pending or established. */
    void closed(TargetConnection connection, boolean wasEstablished)
    {
        if (wasEstablished) {
            established.remove(connection);
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

    int pendingCount()
    {
        return pending.size();
    }

    int establishedCount()
    {
        return established.size();
    }
}
