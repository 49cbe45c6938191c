package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

final class ProgressTest
{
    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private final StringWriter written = new StringWriter();

    @Test
    void aTerminalGetsOneRedrawnLineWithRateAndTimeLeft()
    {
        Progress progress = new Progress(new PrintWriter(written), true, 200, "requests", nanos::get);
        // start-up took 5 s: until a second has passed since the first request done, there is no rate to show
        nanos.addAndGet(5_000_000_000L);
        progress.accept(10);
        assertEquals("\r  [#                             ] 10/200 requests  --/s  ETA --:--   ", written.toString());
        written.getBuffer().setLength(0);
        nanos.addAndGet(2_000_000_000L);
        progress.accept(60);
        // 25 requests a second, 140 left: 5.6 s
        assertEquals("\r  [#########                     ] 60/200 requests  25.0/s  ETA 0:06   ", written.toString());
        nanos.addAndGet(10_000_000L);
        progress.accept(61);
        assertEquals(1, written.toString().split("\r", -1).length - 1, "redrawn at most 10 times a second: " + written);
        nanos.addAndGet(5_590_000_000L);
        progress.accept(200);
        assertTrue(written.toString().endsWith("] 200/200 requests  25.0/s  done in 0:13   \n"), written.toString());
        assertFalse(written.toString().contains("\n\r"), written.toString());
    }

    @Test
    void elsewherePlainLinesEveryTenthWithTheRate()
    {
        Progress progress = new Progress(new PrintWriter(written), false, 200, "requests", nanos::get);
        for (int done = 1; done <= 200; done++) {
            nanos.addAndGet(100_000_000L);
            progress.accept(done);
        }
        List<String> lines = written.toString().lines().toList();
        assertEquals(10, lines.size(), written.toString());
        // 19 requests in the 1.9 s since the first
        assertEquals("progress: 20/200 requests (10.0/s)", lines.get(0));
        assertEquals("progress: 200/200 requests (10.0/s)", lines.get(9));
        assertFalse(written.toString().contains("\r"), written.toString());
    }

    @Test
    void requestsEndingInABurstAfterTheFirstDoNotReadAsThousandsASecond()
    {
        Progress progress = new Progress(new PrintWriter(written), false, 50, "requests", nanos::get);
        nanos.addAndGet(2_000_000_000L);
        for (int done = 1; done <= 5; done++) {
            nanos.addAndGet(10_000L);
            progress.accept(done);
        }
        // 5 requests 2 s after the start, the last 40 us after the first: no rate yet, not 100,000 a second
        assertEquals("progress: 5/50 requests", written.toString().strip());
    }

    @Test
    void aRunShorterThanASecondEndsWithTheRateItMeasured()
    {
        Progress progress = new Progress(new PrintWriter(written), false, 4, "requests", nanos::get);
        nanos.addAndGet(2_000_000_000L);
        for (int done = 1; done <= 4; done++) {
            nanos.addAndGet(100_000_000L);
            progress.accept(done);
        }
        // 3 requests in the 0.3 s after the first: the run is over, so that is its rate
        assertEquals("progress: 4/4 requests (10.0/s)", written.toString().strip().lines().reduce((first, second) -> second).orElseThrow());
    }

    @Test
    void theFirstLineDoesNotCountTheStartUpAsSlowRequests()
    {
        Progress progress = new Progress(new PrintWriter(written), false, 40, "requests", nanos::get);
        // the engines took 30 s to start, then requests end 4 a second
        nanos.addAndGet(30_000_000_000L);
        for (int done = 1; done <= 8; done++) {
            progress.accept(done);
            nanos.addAndGet(250_000_000L);
        }
        List<String> lines = written.toString().lines().toList();
        assertEquals(List.of("progress: 4/40 requests", "progress: 8/40 requests (4.0/s)"), lines);
    }

    @Test
    void timeLeftReadsAsAClock()
    {
        assertEquals("0:00", Progress.clock(0));
        assertEquals("1:05", Progress.clock(65));
        assertEquals("2:00:00", Progress.clock(7200));
    }
}
