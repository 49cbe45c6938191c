package io.kvbridge.engine.jlama;

import io.kvbridge.engine.jlama.serve.DisaggregatedRun;
import io.kvbridge.engine.jlama.serve.RunOptions;
import io.kvbridge.engine.jlama.serve.RunReport;
import io.kvbridge.engine.jlama.serve.SessionResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Prefill streaming its layers: the decoder gets the parameters before the prefill's forward pass
 * and each layer as Jlama completes it, pushed by the prefill JVM or pulled by the decoder as the
 * layers are announced, and still generates every token and every step's logits bits of a JVM that
 * ran the prompts alone; PP1 and PP2 producers, both model shapes, {@code tcp} and {@code ucx},
 * prompts above the connector's {@code streamMinTokens} (256; a shorter request moves whole after
 * all-done, which {@code StreamedDemoTest} covers) and across Jlama's 256-token prompt chunks.
 */
class StreamedPrefillJlamaTest
{
    private static String classPath()
    {
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }

    // each shape, stage count, mode and transport at least once, not every combination: the hand-off
    // without streaming runs every pair in DisaggregatedJlamaTest and PipelineStagesJlamaTest, and
    // each run here starts three or four JVMs. Mixed alternates push and pull by session.
    @ParameterizedTest
    @CsvSource({"llama, 2, tcp, push", "qwen2, 1, tcp, pull", "llama, 1, ucx, mixed"})
    void streamedPrefillHandsOffBitIdentically(String shape, int stages, String backend, String mode, @TempDir Path dir)
    {
        RunOptions options = new RunOptions(backend, mode, 3, 200, 500, 3, 21, shape, 16, -1, 2, 1, null, stages).withStreamLayers(true);
        RunReport report = DisaggregatedRun.run(options, dir, classPath());
        System.err.println(report.toText());
        assertTrue(report.passed(), report::toText);
        assertEquals(3, report.sessions().size());
        assertTrue(report.decoderRanOnlyDecodeSteps(), "the decoder never ran a prompt: " + report.decoderForwardedTokens());
        for (SessionResult session : report.sessions()) {
            assertTrue(session.identical(3), session.id());
            assertTrue(session.decodeReadyNanos() > 0, session.id() + " reports when the decoder had every block");
        }
        assertTrue(report.stagesRegisteredOnlyTheirLayers());
        // every prompt here (276 to 473 tokens) moves layer by layer, each with a last chunk of 20 or more tokens whose pass
        // leaves the layers announced one at a time: the decoder, which decodes one session at a time, sees at least one
        // of them with a layer in place while another is missing
        assertTrue(report.decodeAudit().path("partlyLoadedSessions").asLong() > 0, report.decodeAudit()::toString);
    }

    @Test
    void oneByteChangedBeforeLayerZeroIsAnnouncedFailsTheAudit(@TempDir Path dir)
    {
        // the byte changes after layer 0 is computed and before it is announced: what moves is what the decoder reads
        RunOptions options = new RunOptions("tcp", "push", 1, 300, 300, 3, 5, "llama", 16, 1, 2, 1, null, 1).withStreamLayers(true);
        RunReport report = DisaggregatedRun.run(options, dir, classPath());
        System.err.println(report.toText());
        assertFalse(report.passed(), "a changed key byte must show in the audit");
        SessionResult session = report.sessions().getFirst();
        assertNull(session.error());
        assertFalse(session.mismatchedSteps().isEmpty(), "the decode steps' logits differ from the reference");
        assertFalse(session.mismatchedSteps().contains(0), "the prefill's own first token was computed before the change");
    }
}
