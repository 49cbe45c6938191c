package io.kvbridge.transport;

import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcProcesses;
import java.lang.foreign.Arena;
import java.util.HashMap;
import java.util.Map;

/**
 * The processes of local peers whose pid the kernel vouched for (the {@code SO_PEERCRED} of a
 * Unix-domain socket they hold), each watched through a pidfd so that a peer's death can be proven:
 * what {@link io.kvbridge.spi.transfer.TransferBackend#writerExited} answers for a transport whose
 * peers write this process's memory from their own. A pidfd refers to the process it was opened on, so
 * a pid reused by another process after the peer died never passes for the peer; one opened a moment
 * after a pid was checked can refer to a newer process of that pid only if the peer died in that moment
 * and its pid was reused, which delays the proof until the newer process ends, and never gives it early.
 * A peer's watch stays after it disconnects (a quarantine needs the proof exactly then) and ends when
 * another process connects under its agent name or on {@link #close()}: one descriptor per agent name.
 * Threads: any; the calls are rare (a connection, a quarantine's scan), so they share one lock.
 */
public final class PeerProcesses implements AutoCloseable
{
    // one lock: a descriptor is never closed while another thread polls it, whose number could be reused meanwhile
    private final Map<String, Watched> byAgent = new HashMap<>();

    /** Watches nobody yet. */
    public PeerProcesses()
    {
    }

    /** A watched peer: its pid, and a pidfd, or -1 when the process was gone already when watched. */
    private record Watched(int pid, int pidfd)
    {
    }

    /**
     * Watches a peer's process, replacing (and closing) an earlier watch of that agent name.
     *
     * @param agent the peer's agent name.
     * @param pid its process id, as the kernel reported it for a socket the peer holds.
     */
    public synchronized void watch(String agent, int pid)
    {
        if (pid <= 0) {
            throw new IllegalArgumentException("pid=" + pid + " of peer '" + agent + "' is not a process id");
        }
        Watched current = byAgent.get(agent);
        if (current != null && current.pid == pid) {
            return;
        }
        int pidfd;
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            pidfd = LibcProcesses.pidfdOpen(pid, errno);
            if (pidfd < 0 && errno.last() != ESRCH) {
                // no proof is possible (a kernel before 5.3, out of descriptors): the peer is not watched
                byAgent.remove(agent);
                return;
            }
        }
        // ESRCH: no process has the pid any more, so the one the kernel vouched for has exited
        Watched previous = byAgent.put(agent, new Watched(pid, pidfd));
        if (previous != null) {
            closeQuietly(previous);
        }
    }

    /**
     * Tells whether a watched peer's process has exited, polling its pidfd without waiting.
     *
     * @param agent a peer's agent name.
     * @return the proof that its process exited, in words naming the pid and how it is known, or null
     *     while it runs, when it is not watched, or when its descriptor cannot be polled.
     */
    public synchronized String exited(String agent)
    {
        Watched watched = byAgent.get(agent);
        if (watched == null) {
            return null;
        }
        if (watched.pidfd < 0) {
            return "process " + watched.pid + " of peer '" + agent + "' had exited when it was to be watched (pidfd_open: ESRCH)";
        }
        try (Arena arena = Arena.ofConfined()) {
            int exited = LibcProcesses.exited(watched.pidfd, new Errno(arena));
            return exited == 1 ? "process " + watched.pid + " of peer '" + agent + "' exited (its pidfd polled readable)" : null;
        }
    }

    /** {@return how many peers are watched} */
    public synchronized int size()
    {
        return byAgent.size();
    }

    /** Closes every descriptor. */
    @Override
    public synchronized void close()
    {
        byAgent.values().forEach(PeerProcesses::closeQuietly);
        byAgent.clear();
    }

    private static final int ESRCH = 3;

    private static void closeQuietly(Watched watched)
    {
        if (watched.pidfd >= 0) {
            try (Arena arena = Arena.ofConfined()) {
                Libc.close(watched.pidfd, new Errno(arena));
            }
        }
    }
}
