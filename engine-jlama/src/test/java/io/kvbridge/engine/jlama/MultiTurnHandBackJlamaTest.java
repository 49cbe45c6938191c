package io.kvbridge.engine.jlama;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.engine.jlama.serve.DisaggregatedRun;
import io.kvbridge.engine.jlama.serve.EngineProcess;
import io.kvbridge.engine.jlama.serve.Lines;
import io.kvbridge.engine.jlama.serve.RunOptions;
import io.kvbridge.engine.jlama.serve.RunReport;
import io.kvbridge.engine.jlama.serve.ServerOptions;
import io.kvbridge.engine.jlama.serve.SessionResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The two-way hand-off between turns: at a turn's end the decoder hands the conversation's KV back
 * to the prefill JVM, which receives only the blocks it lacks and computes only the next turn's new
 * tokens, while every token and logits bit still matches a JVM that computed each turn's whole
 * prompt afresh. Streamed, the prefill JVM announces each turn after its hand-back landed and hands
 * each layer of the new tokens' pass forward as it computes it; the checks are the same.
 */
class MultiTurnHandBackJlamaTest
{
    private static final int STEPS = 4;
    private static final long LLAMA_BYTES_PER_TOKEN = 64L * Float.BYTES * 2 * 8;

    private static String classPath()
    {
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }

    @ParameterizedTest(name = "streamLayers={0}")
    @ValueSource(booleans = {false, true})
    void threeTurnsOfTwoSessionsHandBackOnlyTheLackingBlocksAndStayBitIdentical(boolean streamLayers, @TempDir Path dir)
    {
        // mixed: session 0 pushes both ways, session 1 pulls both ways
        RunOptions options = new RunOptions("tcp", "mixed", 2, 40, 90, STEPS, 9, "llama", 16, -1, 2, 3, null, 1, streamLayers);
        assertTrue(options.handBack(), "several turns hand back by default, streamed or not");
        RunReport report = DisaggregatedRun.run(options, dir, classPath());
        System.err.println(report.toText());
        assertTrue(report.passed(), report::toText);
        assertEquals(6, report.sessions().size(), "three turns of two sessions");
        assertTrue(report.decoderRanOnlyDecodeSteps(), "the decoder ran only its decode steps: " + report.decoderForwardedTokens());
        long prefillNew = 0;
        for (int s = 0; s < 2; s++) {
            for (int turn = 0; turn < 3; turn++) {
                SessionResult session = report.sessions().get(3 * s + turn);
                if (turn == 0) {
                    assertEquals(0, session.handedBackTokens(), "a first turn is computed whole");
                    assertEquals(0, session.handBackBytes());
                    prefillNew += session.promptTokens();
                    continue;
                }
                SessionResult earlier = report.sessions().get(3 * s + turn - 1);
                // the decoder holds the earlier prompt and every token it fed: the first token and STEPS - 1 generated ones
                int held = earlier.promptTokens() + STEPS;
                assertEquals(held, session.handedBackTokens(), session.id());
                long lacking = (held + 15) / 16 - earlier.promptTokens() / 16;
                assertEquals(lacking * 16 * LLAMA_BYTES_PER_TOKEN, session.handBackBytes(), session.id() + ": only the blocks the prefill JVM lacked");
                prefillNew += session.promptTokens() - held;
            }
        }
        assertTrue(report.prefillRanOnlyNewTokens(), report::toText);
        assertEquals(prefillNew, report.prefillAudit().path("forwardedTokens").asLong(), "the prefill JVM computed only turns' new tokens");
        assertEquals(6, report.prefillAudit().path("freed").asInt());
        assertEquals(2, report.prefillAudit().path("freeSlots").asInt(), "both conversations' prefill slots returned after forget");
        assertEquals(2, report.decodeAudit().path("freeSlots").asInt(), "both conversations' decoder slots returned after forget");
    }

    @Test
    void aHandBackOfAConversationThePrefillDoesNotKeepIsRefusedAndAChangedByteInOneShowsInTheNextTurn(@TempDir Path dir)
            throws InterruptedException
    {
        Path model = SyntheticModelWriter.write(dir.resolve("model"), SyntheticModel.llamaGqa(5));
        byte[] secret = HexFormat.of().parseHex("00112233445566778899aabbccddeeff");
        ServerOptions prefillOptions = new ServerOptions("prefill", model, dir.resolve("pages-p"), "tcp", 2, 16, secret, -1).withHandBack(true);
        // the negative control: the decoder changes one byte of the last handed-back row (layer 0's key) before each hand-back
        ServerOptions decodeOptions = new ServerOptions("decode", model, dir.resolve("pages-d"), "tcp", 2, 16, secret, 0).withHandBack(true);
        try (EngineProcess prefill = EngineProcess.start(prefillOptions, classPath(), dir.resolve("prefill.log"), 180);
                EngineProcess decode = EngineProcess.start(decodeOptions, classPath(), dir.resolve("decode.log"), 180)) {
            int[] prompt = IntStream.range(0, 40).map(i -> i == 0 ? 1 : 40 + i).toArray();
            ObjectNode first = prefill.request(prefill("c-1", "kept", prompt), 120);
            assertFalse(first.has("error"), first::toString);
            ObjectNode decoded = decodeAndHandBack(decode, "c-1", "kept", prompt, first);
            int held = prompt.length + 3;
            assertEquals(held, decoded.path("handBackTokens").asInt(), "the prompt and the three tokens the decoder fed");
            int[] next = nextTurn(prompt, first, decoded);

            ObjectNode madeUp = prefill.request(withHandBack(prefill("c-2", "made-up", next), decoded), 60);
            assertEquals("INVALID_ARGUMENT", madeUp.path("error").asText(), madeUp::toString);
            String message = madeUp.path("message").asText();
            assertTrue(message.contains("request c-2") && message.contains("conversation made-up") && message.contains("nothing was moved"), message);
            assertEquals(prompt.length, audit(prefill).path("forwardedTokens").asLong(), "the refused turn computed nothing");

            ObjectNode handedBack = prefill.request(withHandBack(prefill("c-3", "kept", next), decoded), 60);
            assertFalse(handedBack.has("error"), handedBack::toString);
            assertEquals(held, handedBack.path("computedFrom").asInt(), "only the new tokens were computed");
            ObjectNode whole = prefill.request((ObjectNode) Lines.object().put("op", "prefill").put("id", "c-4").set("prompt", array(next)), 60);
            assertFalse(whole.has("error"), whole::toString);
            assertFalse(whole.path("digest").asText().equals(handedBack.path("digest").asText()),
                    "the prefill computed the new tokens from the changed handed-back row, so its logits differ from computing the prompt whole");

            assertTrue(prefill.request(Lines.object().put("op", "forget").put("id", "f").put("conversation", "kept"), 60).path("forgotten").asBoolean());
            ObjectNode forgotten = prefill.request(withHandBack(prefill("c-5", "kept", next), decoded), 60);
            assertEquals("INVALID_ARGUMENT", forgotten.path("error").asText(), forgotten::toString);
            assertTrue(forgotten.path("message").asText().contains("request c-5") && forgotten.path("message").asText().contains("conversation kept"),
                    forgotten::toString);

            // nobody decodes c-3 and c-4: kvbridge frees their blocks; the decoder lets go of the conversation
            prefill.request(Lines.object().put("op", "abort").put("id", "c-3"), 60);
            prefill.request(Lines.object().put("op", "abort").put("id", "c-4"), 60);
            decode.request(Lines.object().put("op", "forget").put("id", "f").put("conversation", "kept"), 60);

            // streamed: the turn is announced (its parameters sent at once) only after the changed hand-back landed, so its pass reads it
            ObjectNode streamedFirst = prefill.request(prefill("s-1", "streamed", prompt), 120);
            assertFalse(streamedFirst.has("error"), streamedFirst::toString);
            ObjectNode streamedDecoded = decodeAndHandBack(decode, "s-1", "streamed", prompt, streamedFirst);
            assertArrayEquals(next, nextTurn(prompt, streamedFirst, streamedDecoded), "the same prompt decodes the same tokens");
            List<ObjectNode> started = new ArrayList<>();
            ObjectNode streamedTurn = prefill.request(withHandBack(prefill("s-3", "streamed", next), streamedDecoded).put("stream", true), 60,
                    started::add);
            assertFalse(streamedTurn.has("error"), streamedTurn::toString);
            assertEquals(1, started.size(), "a streamed turn sends its parameters before its reply: " + started);
            assertEquals(streamedTurn.path("params").asText(), started.getFirst().path("params").asText());
            assertEquals(held, streamedTurn.path("computedFrom").asInt(), "only the new tokens were computed");
            assertEquals(handedBack.path("digest").asText(), streamedTurn.path("digest").asText(),
                    "streamed or whole, the pass over the new tokens read the same changed hand-back");
            prefill.request(Lines.object().put("op", "abort").put("id", "s-3"), 60);
            prefill.request(Lines.object().put("op", "forget").put("id", "f").put("conversation", "streamed"), 60);
            decode.request(Lines.object().put("op", "forget").put("id", "f").put("conversation", "streamed"), 60);

            ObjectNode prefillAudit = awaitIdle(prefill);
            ObjectNode decodeAudit = awaitIdle(decode);
            assertTrue(prefillAudit.path("idle").asBoolean(), prefillAudit::toString);
            assertTrue(decodeAudit.path("idle").asBoolean(), decodeAudit::toString);
            assertEquals(2 * (prompt.length + next.length - held) + next.length, prefillAudit.path("forwardedTokens").asLong(),
                    "the refused turns computed nothing");
            assertEquals(2, prefillAudit.path("freeSlots").asInt(), prefillAudit::toString);
            assertEquals(2, decodeAudit.path("freeSlots").asInt(), decodeAudit::toString);
        }
    }

    private static ObjectNode audit(EngineProcess engine)
    {
        return engine.request(Lines.object().put("op", "audit").put("id", "audit"), 60);
    }

    private static ObjectNode prefill(String id, String conversation, int[] prompt)
    {
        return (ObjectNode) Lines.object().put("op", "prefill").put("id", id).put("conversation", conversation).put("mode", "PUSH")
                .set("prompt", array(prompt));
    }

    private static com.fasterxml.jackson.databind.node.ArrayNode array(int[] tokens)
    {
        com.fasterxml.jackson.databind.node.ArrayNode array = Lines.object().arrayNode();
        for (int token : tokens) {
            array.add(token);
        }
        return array;
    }

    /** Decodes a conversation's turn three steps and hands it back. */
    private static ObjectNode decodeAndHandBack(EngineProcess decode, String id, String conversation, int[] prompt, ObjectNode first)
    {
        ObjectNode decoded = decode.request(((ObjectNode) Lines.object().put("op", "decode").put("id", id).put("promptLength", prompt.length)
                .put("steps", 3).put("mode", "PUSH").put("conversation", conversation).put("handBack", true).set("prompt", array(prompt)))
                .put("token", first.path("token").asInt()).put("params", first.path("params").asText()), 120);
        assertFalse(decoded.has("error"), decoded::toString);
        return decoded;
    }

    /** The next turn's prompt: the earlier one, the three tokens the decoder fed, and ten new ones. */
    private static int[] nextTurn(int[] prompt, ObjectNode first, ObjectNode decoded)
    {
        int held = prompt.length + 3;
        int[] fed = {first.path("token").asInt(), decoded.path("tokens").path(0).asInt(), decoded.path("tokens").path(1).asInt()};
        return IntStream.range(0, held + 10).map(i -> i < prompt.length ? prompt[i] : i < held ? fed[i - prompt.length] : 60).toArray();
    }

    private static ObjectNode withHandBack(ObjectNode command, ObjectNode decoded)
    {
        return command.put("handBack", decoded.path("handBack").asText()).put("handBackId", decoded.path("handBackId").asText())
                .put("handBackTokens", decoded.path("handBackTokens").asInt());
    }

    private static ObjectNode awaitIdle(EngineProcess engine) throws InterruptedException
    {
        long deadline = System.nanoTime() + 20_000_000_000L;
        ObjectNode audit = engine.request(Lines.object().put("op", "audit").put("id", "audit"), 60);
        while (!(audit.path("idle").asBoolean() && audit.path("freeSlots").asInt() == 2) && System.nanoTime() < deadline) {
            Thread.sleep(20);
            audit = engine.request(Lines.object().put("op", "audit").put("id", "audit"), 60);
        }
        return audit;
    }
}
