package io.kvbridge.examples.cli;

import static java.util.Objects.requireNonNull;

import java.io.PrintWriter;
import java.util.Locale;
import java.util.function.IntConsumer;
import java.util.function.LongSupplier;

/**
 * Progress of a run of {@code total} steps, on the error stream so that the output stays clean for
 * {@code > file} and {@code --json}. On a terminal one line is redrawn with a bar, the rate and the
 * time left, at most {@value #REDRAWS_PER_SECOND} times a second; elsewhere (a log, a pipe) a plain
 * line every tenth of the run, with the rate. The rate counts from the first step reported, and is
 * shown once a second has passed since it: before, it could only count the start-up in.
 */
final class Progress implements IntConsumer
{
    private static final int REDRAWS_PER_SECOND = 10;
    private static final int BAR_WIDTH = 30;
    private static final double MIN_RATE_SECONDS = 1.0;

    private final PrintWriter err;
    private final boolean terminal;
    private final int total;
    private final String unit;
    private final LongSupplier nanos;
    private final long start;
    private final int step;
    private long lastDraw;
    // the rate counts from the first step, so that start-up time does not read as a slow run
    private long firstNanos;
    private int firstDone = -1;

    /**
     * @param err where progress goes.
     * @param terminal whether {@code err} is a terminal.
     * @param total steps of the whole run.
     * @param unit what a step is, for example {@code requests}.
     * @param nanos the clock, {@code System::nanoTime} outside tests.
     */
    Progress(PrintWriter err, boolean terminal, int total, String unit, LongSupplier nanos)
    {
        this.err = requireNonNull(err, "err is null");
        this.terminal = terminal;
        this.total = total;
        this.unit = requireNonNull(unit, "unit is null");
        this.nanos = requireNonNull(nanos, "nanos is null");
        this.start = nanos.getAsLong();
        this.step = Math.max(1, total / 10);
        this.lastDraw = start - 1_000_000_000L;
    }

    @Override
    public void accept(int done)
    {
        long now = nanos.getAsLong();
        if (firstDone < 0) {
            firstDone = done;
            firstNanos = now;
        }
        double seconds = (now - start) / 1e9;
        double rate = rate(done, now);
        if (terminal) {
            if (done < total && now - lastDraw < 1_000_000_000L / REDRAWS_PER_SECOND) {
                return;
            }
            lastDraw = now;
            int filled = (int) ((long) done * BAR_WIDTH / total);
            String eta = done == total ? "done in " + clock(seconds) : rate > 0 ? "ETA " + clock((total - done) / rate) : "ETA --:--";
            // the trailing spaces clear what a longer earlier line left
            err.printf(Locale.ROOT, "\r  [%s%s] %d/%d %s  %s/s  %s   %s", "#".repeat(filled), " ".repeat(BAR_WIDTH - filled), done, total, unit,
                    rate < 0 ? "--" : String.format(Locale.ROOT, "%.1f", rate), eta, done == total ? "\n" : "");
            err.flush();
        }
        else if (done % step == 0 || done == total) {
            err.printf(Locale.ROOT, "progress: %d/%d %s%s%n", done, total, unit, rate < 0 ? "" : String.format(Locale.ROOT, " (%.1f/s)", rate));
            err.flush();
        }
    }

    /**
     * Steps per second since the first step, once that spans {@value #MIN_RATE_SECONDS} s or the run
     * ended; before, -1 (not known yet): steps that end in a burst right after the first would read as thousands a
     * second, and counting from the start would count the engines' start-up as slow steps.
     */
    private double rate(int done, long now)
    {
        double sinceFirst = (now - firstNanos) / 1e9;
        // the last step closes the run's own span, however short: its rate is measured, not a burst's
        boolean measured = sinceFirst >= MIN_RATE_SECONDS || (done == total && done > firstDone && sinceFirst > 0);
        return measured ? (done - firstDone) / sinceFirst : -1;
    }

    /** @return {@code m:ss}, or {@code h:mm:ss} from an hour. */
    static String clock(double seconds)
    {
        long whole = Math.round(Math.min(seconds, 359_999));
        return whole >= 3600 ? String.format(Locale.ROOT, "%d:%02d:%02d", whole / 3600, whole / 60 % 60, whole % 60)
                : String.format(Locale.ROOT, "%d:%02d", whole / 60, whole % 60);
    }
}
