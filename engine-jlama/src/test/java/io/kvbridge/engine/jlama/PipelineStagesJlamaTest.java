package io.kvbridge.engine.jlama;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvbridge.engine.jlama.serve.DisaggregatedRun;
import io.kvbridge.engine.jlama.serve.RunOptions;
import io.kvbridge.engine.jlama.serve.RunReport;
import io.kvbridge.engine.jlama.serve.SessionResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Prefill as two pipeline stages in two JVMs (PP2), each registering and handing over only its
 * half of the layers, into one decoder holding every layer (PP1), which kvbridge pairs by layer
 * name: every token and every step's logits bits match a JVM that ran the prompts alone.
 */
class PipelineStagesJlamaTest
{
    private static String classPath()
    {
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }

    @ParameterizedTest
    @CsvSource({"llama, mixed, 8", "qwen2, pull, 6"})
    void twoPrefillStagesHandOffToOneDecoderBitIdentically(String shape, String mode, int layers, @TempDir Path dir)
    {
        RunOptions options = new RunOptions("tcp", mode, 3, 20, 100, 3, 13, shape, 16, -1, 2, 1, null, 2);
        RunReport report = DisaggregatedRun.run(options, dir, classPath());
        System.err.println(report.toText());
        assertTrue(report.passed(), report::toText);
        assertEquals(3, report.sessions().size());
        assertTrue(report.decoderRanOnlyDecodeSteps(), "the decoder never ran a prompt: " + report.decoderForwardedTokens());
        for (SessionResult session : report.sessions()) {
            assertEquals(4, session.tokens().size(), "the first token from prefill and 3 decode steps");
            assertTrue(session.identical(3), session.id());
        }
        JsonNode stages = report.prefillAudit().path("stages");
        assertEquals(2, stages.size(), report.prefillAudit()::toString);
        for (int p = 0; p < 2; p++) {
            JsonNode stage = stages.get(p);
            assertEquals(p, stage.path("ppRank").asInt());
            List<Integer> expected = IntStream.range(p * layers / 2, (p + 1) * layers / 2).boxed().toList();
            assertEquals(expected, ints(stage.path("registeredLayers")), "stage " + p + " registered only its layers");
            assertEquals(3, stage.path("freed").asInt(), "stage " + p + " freed every session's slot");
            assertTrue(stage.path("idle").asBoolean(), stage::toString);
        }
        assertEquals(IntStream.range(0, layers).boxed().toList(), ints(report.decodeAudit().path("registeredLayers")), "the decoder holds every layer");
        assertTrue(report.stagesRegisteredOnlyTheirLayers());
    }

    @Test
    void oneByteChangedInTheFirstStageAfterPrefillFailsTheAudit(@TempDir Path dir)
    {
        // layer 0's key plane is stage 0's: the decoder reads what stage 0 moved, not a copy of its own
        RunReport report = DisaggregatedRun.run(new RunOptions("tcp", "pull", 1, 40, 40, 3, 5, "llama", 16, 1, 2, 1, null, 2), dir, classPath());
        System.err.println(report.toText());
        assertFalse(report.passed(), "a changed key byte must show in the audit");
        SessionResult session = report.sessions().getFirst();
        assertNull(session.error());
        assertFalse(session.mismatchedSteps().isEmpty(), "the decode steps' logits differ from the reference");
        assertFalse(session.mismatchedSteps().contains(0), "the prefill's own first token was computed before the change");
    }

    private static List<Integer> ints(JsonNode array)
    {
        List<Integer> values = new ArrayList<>();
        array.forEach(v -> values.add(v.asInt()));
        return values;
    }
}
