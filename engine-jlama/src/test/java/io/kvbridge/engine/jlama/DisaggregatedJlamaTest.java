package io.kvbridge.engine.jlama;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.engine.jlama.serve.DisaggregatedRun;
import io.kvbridge.engine.jlama.serve.EngineProcess;
import io.kvbridge.engine.jlama.serve.Lines;
import io.kvbridge.engine.jlama.serve.ServerOptions;
import io.kvbridge.engine.jlama.serve.RunOptions;
import io.kvbridge.engine.jlama.serve.RunReport;
import io.kvbridge.engine.jlama.serve.SessionResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HexFormat;

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
    void anExistingModelDirectoryIsServedWithTheShapeItsConfigGives(@TempDir Path dir)
    {
        // a Qwen2 directory while the run's preset names llama: everything must come from the directory
        Path model = SyntheticModelWriter.write(dir.resolve("downloaded-qwen2"), SyntheticModel.qwen2(11));
        RunReport report = DisaggregatedRun.run(new RunOptions("tcp", "mixed", 2, 20, 70, 3, 5, "llama", 16, -1, 2, 1, model), dir.resolve("run"),
                classPath());
        System.err.println(report.toText());
        assertTrue(report.passed(), report::toText);
        assertEquals(2, report.sessions().size());
        assertTrue(report.decoderRanOnlyDecodeSteps(), "the decoder ran only its decode steps: " + report.decoderForwardedTokens());
        long qwen2BytesPerToken = 2L * 6 * 128 * Float.BYTES;
        for (SessionResult session : report.sessions()) {
            assertEquals(4, session.tokens().size(), "the first token from prefill and 3 decode steps");
            assertEquals((session.promptTokens() + 15) / 16 * 16 * qwen2BytesPerToken, session.bytesMoved(), "Qwen2's rows, not Llama's");
        }
        assertFalse(java.nio.file.Files.exists(dir.resolve("run").resolve("model-llama")), "no model was written");
        assertTrue(report.toText().startsWith("jlama " + model + " over tcp"), "the audit names the directory it served: " + report.toText());
        assertEquals(model.toString(), report.toJson().path("model").asText());
    }

    @Test
    void aSecondTurnReceivesOnlyTheBlocksTheDecoderDoesNotHoldAndStaysBitIdentical(@TempDir Path dir)
    {
        int steps = 4;
        RunReport report = DisaggregatedRun.run(new RunOptions("tcp", "mixed", 2, 40, 90, steps, 9, "llama", 16, -1, 2, 2).withHandBack(false), dir,
                classPath());
        System.err.println(report.toText());
        assertTrue(report.passed(), report::toText);
        assertEquals(4, report.sessions().size(), "two turns of two sessions");
        assertTrue(report.prefillRanOnlyNewTokens() && report.sessions().stream().allMatch(s -> s.handedBackTokens() == 0),
                "without the hand-back each turn's prefill computes the whole conversation");
        long bytesPerToken = 64L * Float.BYTES * 2 * 8;
        for (int s = 0; s < 2; s++) {
            SessionResult first = report.sessions().get(2 * s);
            SessionResult second = report.sessions().get(2 * s + 1);
            assertEquals(0, first.cachedTokens(), "a first turn holds nothing");
            // the decoder holds the first turn's prompt and the tokens it fed: whole blocks of those are not moved again
            int held = first.promptTokens() + steps;
            assertEquals(held / 16 * 16, second.cachedTokens(), second.id());
            assertTrue(second.promptTokens() > held, "the second turn's prompt adds the first turn's output and new tokens");
            long suffixBlocks = (second.promptTokens() + 15) / 16 - second.cachedTokens() / 16;
            assertEquals(suffixBlocks * 16 * bytesPerToken, second.bytesMoved(), "only the uncached suffix moves");
        }
    }

    @Test
    void aSessionLongerThanTheDecodersPagesIsRefusedBeforeAnyTransfer(@TempDir Path dir)
    {
        Path model = SyntheticModelWriter.write(dir.resolve("model"), SyntheticModel.llamaGqa(5));
        ServerOptions options = new ServerOptions("decode", model, dir.resolve("pages"), "tcp", 1, 16, HexFormat.of().parseHex("00112233445566778899aabbccddeeff"),
                -1);
        try (EngineProcess decode = EngineProcess.start(options, classPath(), dir.resolve("decode.log"), 180)) {
            // params that name no producer: the length check must refuse before anything reads them
            ObjectNode reply = decode.request(Lines.object().put("op", "decode").put("id", "too-long").put("promptLength", 4090).put("steps", 8)
                    .put("token", 5).put("mode", "PULL").put("params", "{}"), 60);
            assertEquals("INVALID_ARGUMENT", reply.path("error").asText(), reply::toString);
            String message = reply.path("message").asText();
            assertTrue(message.contains("4098 positions") && message.contains("hold 4096") && message.contains("refused before any transfer"), message);
            ObjectNode audit = decode.request(Lines.object().put("op", "audit").put("id", "audit"), 60);
            assertTrue(audit.path("idle").asBoolean(), audit::toString);
            assertEquals(0, audit.path("forwardedTokens").asLong());
            assertEquals(1, audit.path("freeSlots").asInt(), "the slot was never taken");
        }
    }

    @Test
    void aSlotReturnsOnlyWhenKvbridgeFreesTheRequest(@TempDir Path dir) throws InterruptedException
    {
        Path model = SyntheticModelWriter.write(dir.resolve("model"), SyntheticModel.llamaGqa(5));
        ServerOptions options = new ServerOptions("prefill", model, dir.resolve("pages"), "tcp", 2, 16, HexFormat.of().parseHex("00112233445566778899aabbccddeeff"),
                -1);
        try (EngineProcess prefill = EngineProcess.start(options, classPath(), dir.resolve("prefill.log"), 180)) {
            ObjectNode first = prefill.request((ObjectNode) Lines.object().put("op", "prefill").put("id", "held")
                    .set("prompt", Lines.object().arrayNode().add(1).add(40).add(41).add(42)), 120);
            assertFalse(first.has("error"), first::toString);
            ObjectNode held = prefill.request(Lines.object().put("op", "audit").put("id", "audit"), 60);
            assertEquals(1, held.path("freeSlots").asInt(), "the prefilled request holds its slot while no decoder took its blocks");
            assertFalse(held.path("idle").asBoolean(), "the producer holds the request under a lease");

            prefill.request(Lines.object().put("op", "abort").put("id", "held"), 60);
            ObjectNode audit = held;
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (audit.path("freeSlots").asInt() != 2 && System.nanoTime() < deadline) {
                Thread.sleep(20);
                audit = prefill.request(Lines.object().put("op", "audit").put("id", "audit"), 60);
            }
            assertEquals(2, audit.path("freeSlots").asInt(), audit::toString);
            assertEquals(1, audit.path("freed").asInt());
            assertTrue(audit.path("idle").asBoolean(), audit::toString);
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
