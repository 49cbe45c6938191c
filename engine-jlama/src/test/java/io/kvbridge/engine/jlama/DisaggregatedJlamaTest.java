package io.kvbridge.engine.jlama;

import io.kvbridge.engine.jlama.serve.DisaggregatedRun;
import io.kvbridge.engine.jlama.serve.RunOptions;
import io.kvbridge.engine.jlama.serve.RunReport;
import io.kvbridge.engine.jlama.serve.SessionResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Prefill in one JVM, decode in another, kvbridge's tcp transport between them: every token and
 * every step's logits bits match a third JVM that ran the same prompts alone.
 */
class DisaggregatedJlamaTest
{
    private static String classPath()
    {
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }

    @Test
    void decodeFromMovedCacheIsBitIdenticalOverTcp(@TempDir Path dir)
    {
        RunReport report = DisaggregatedRun.run(new RunOptions("tcp", "mixed", 3, 20, 120, 4, 5, "llama", 16, -1), dir, classPath());
        System.err.println(report.toText());
        assertTrue(report.passed(), report::toText);
        assertEquals(3, report.sessions().size());
        assertTrue(report.decoderRanOnlyDecodeSteps(), "the decoder ran only its decode steps: " + report.decoderForwardedTokens());
        for (SessionResult session : report.sessions()) {
            assertEquals(5, session.tokens().size(), "the first token from prefill and 4 decode steps");
            assertTrue(session.bytesMoved() > 0);
        }
    }

    @Test
    void oneByteChangedInFlightFailsTheAudit(@TempDir Path dir)
    {
        RunReport report = DisaggregatedRun.run(new RunOptions("tcp", "pull", 1, 40, 40, 3, 5, "llama", 16, 1), dir, classPath());
        System.err.println(report.toText());
        assertFalse(report.passed(), "a changed key byte must show in the audit");
        SessionResult session = report.sessions().getFirst();
        assertEquals(null, session.error());
        assertFalse(session.mismatchedSteps().isEmpty(), "the decode steps' logits differ from the reference");
        assertFalse(session.mismatchedSteps().contains(0), "the prefill's own first token was computed before the change");
    }
}
