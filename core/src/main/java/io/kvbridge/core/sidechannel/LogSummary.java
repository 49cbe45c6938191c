package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.Map;
import java.util.StringJoiner;
import java.util.TreeMap;
import org.slf4j.Logger;

/**
 * Logs events a peer can cause at will (refused connections, rejected notifications) as one WARN
 * line per interval instead of one per event, so that a flood cannot flood the log too. The first
 * event after a quiet interval is logged at once; later ones are counted by reason and summed up in
 * the line the next event after the interval writes.
 *
 * <p>Thread safe.
 */
public final class LogSummary
{
    private final Logger log;
    private final String subject;
    private final long intervalNanos;
    private final Map<String, Long> counts = new TreeMap<>();
    private long lineNanos;
    private boolean logged;
    private String lastDetail = "";

    /**
     * Creates a summary that writes nothing until an event is recorded.
     *
     * @param log where the lines go.
     * @param subject what the events are, e.g. {@code "side channel of engine p: refused connections"}.
     * @param interval at most one line per interval.
     */
    public LogSummary(Logger log, String subject, Duration interval)
    {
        this.log = requireNonNull(log, "log is null");
        this.subject = requireNonNull(subject, "subject is null");
        this.intervalNanos = requireNonNull(interval, "interval is null").toNanos();
    }

    /**
     * Counts one event and writes a line when the interval allows.
     *
     * @param reason a short, fixed word that groups events, e.g. {@code "displaced"}.
     * @param detail what this event was, shown only when its line is written.
     */
    public void record(String reason, String detail)
    {
        String line;
        synchronized (this) {
            counts.merge(reason, 1L, Long::sum);
            lastDetail = detail;
            long now = System.nanoTime();
            if (logged && now - lineNanos < intervalNanos) {
                return;
            }
            StringJoiner summary = new StringJoiner(", ");
            long total = 0;
            for (Map.Entry<String, Long> entry : counts.entrySet()) {
                summary.add(entry.getValue() + " " + entry.getKey());
                total += entry.getValue();
            }
            line = String.format("%s: %d in the last %d ms (%s); latest: %s", subject, total, logged ? (now - lineNanos) / 1_000_000 : 0, summary,
                    lastDetail);
            counts.clear();
            lineNanos = now;
            logged = true;
        }
        log.warn("{} (at most one line per {} s)", line, intervalNanos / 1_000_000_000L);
    }
}
