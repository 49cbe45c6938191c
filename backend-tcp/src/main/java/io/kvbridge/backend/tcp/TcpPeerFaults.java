package io.kvbridge.backend.tcp;

import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.LogInterval;
import io.kvbridge.transport.PeerText;
import java.util.Locale;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What peers did that an instance refused, apart from the grants' refusals: connections closed for
 * breaking the protocol, connections closed before they proved who they are, notifications dropped
 * because the inbox was full. Each kind is counted, keeps its latest (the peer's chosen name
 * escaped) and is logged at most every 10 s. None is a health problem: anyone who reaches the port
 * can cause them, and the instance serves every other peer all the same.
 *
 * <p>Threads: the owner thread records; any thread reads the counts and the report.
 */
final class TcpPeerFaults
{
    private static final Logger LOG = LoggerFactory.getLogger(TcpPeerFaults.class);

    private final String description;
    private final Inbox inbox;
    private volatile long malformed;
    private volatile String lastMalformed;
    private final LogInterval malformedLog = new LogInterval(LogInterval.TEN_SECONDS_NANOS);
    private volatile long rejected;
    private volatile String lastRejected;
    private final LogInterval rejectedLog = new LogInterval(LogInterval.TEN_SECONDS_NANOS);
    private final LogInterval droppedLog = new LogInterval(LogInterval.TEN_SECONDS_NANOS);

    TcpPeerFaults(String description, Inbox inbox)
    {
        this.description = description;
        this.inbox = inbox;
    }

    /** A connection was closed for breaking the protocol. */
    void malformed(String name, String what)
    {
        String peer = PeerText.printable(name);
        malformed++;
        lastMalformed = peer + ": " + what;
        if (malformedLog.due(System.nanoTime())) {
            LOG.warn("{}: closed the connection of {}, which broke the protocol: {} ({} such connections so far; logged at most every 10 s)",
                    description, peer, what, malformed);
        }
    }

    /** A connection that never proved who it is was closed. */
    void rejected(String name, String what)
    {
        String peer = PeerText.printable(name);
        rejected++;
        lastRejected = peer + ": " + what;
        if (rejectedLog.due(System.nanoTime())) {
            LOG.warn("{}: closed the connection of {}, which did not prove who it is: {} ({} such connections so far; logged at most every 10 s)",
                    description, peer, what, rejected);
        }
    }

    /** A notification of a verified peer was dropped: the inbox held its bound (the inbox counts it). */
    void dropped(String name)
    {
        if (droppedLog.due(System.nanoTime())) {
            LOG.warn("{}: dropped a notification of peer '{}': {} notifications ({} bytes) wait undrained ({} dropped so far; logged at most"
                    + " every 10 s)", description, PeerText.printable(name), inbox.size(), inbox.bytes(), inbox.dropped());
        }
    }

    long malformedCount()
    {
        return malformed;
    }

    long rejectedCount()
    {
        return rejected;
    }

    /** {@return every kind that happened, with counts and the latest; empty when none did} */
    Optional<String> report()
    {
        StringBuilder text = new StringBuilder();
        long count = malformed;
        if (count > 0) {
            text.append(String.format(Locale.ROOT,
                    "%s closed %d connections of peers that broke the protocol, the latest %s; check that peer's process and its kvbridge version",
                    description, count, lastMalformed));
        }
        long refused = rejected;
        if (refused > 0) {
            text.append(text.isEmpty() ? "" : "; ").append(String.format(Locale.ROOT, "%s closed %d connections that did not prove who they are, the latest %s",
                    description, refused, lastRejected));
        }
        long dropped = inbox.dropped();
        if (dropped > 0) {
            text.append(text.isEmpty() ? "" : "; ").append(String.format(Locale.ROOT, "%s dropped %d notifications: its inbox was full", description, dropped));
        }
        return text.isEmpty() ? Optional.empty() : Optional.of(text.toString());
    }
}
