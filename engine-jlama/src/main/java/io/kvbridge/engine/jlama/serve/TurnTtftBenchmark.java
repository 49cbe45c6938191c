package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.engine.jlama.JlamaModelDirectory;
import io.kvbridge.engine.jlama.SyntheticModel;
import io.kvbridge.engine.jlama.SyntheticModelWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * A conversation's second-turn time to the decoder's first token, two ways, in the same two engine
 * JVMs (both kv_both): handed back (the decoder hands the first turn's KV back, the prefill JVM
 * receives the blocks it lacks and computes only the new tokens) against recomputed (the prefill
 * JVM computes the whole conversation, as with {@code --hand-back off}). Either way the decoder
 * keeps its own slot and receives only the blocks it lacks. Each pair sets up two conversations
 * with the same first turn (untimed), then times both second turns at the router, from the prefill
 * request to the reply holding the decoder's first step, in an order that alternates by round.
 */
public final class TurnTtftBenchmark
{
    private static final int READY_SECONDS = 180;
    private static final int REQUEST_SECONDS = 300;

    private TurnTtftBenchmark()
    {
    }

    /**
     * Runs the benchmark.
     *
     * @param options what to measure.
     * @param directory where the model, the engines' pages and logs go.
     * @param classPath the engines' class path.
     * @return every timed pair, by history.
     */
    public static TurnTtftReport run(TurnTtftOptions options, Path directory, String classPath)
    {
        SyntheticModel preset = SyntheticModel.named(options.model(), options.seed());
        SyntheticModel shape = new SyntheticModel(preset.architecture(), preset.layers(), preset.heads(), preset.kvHeads(), preset.hidden(),
                preset.intermediate(), preset.vocabulary(), TurnTtftOptions.CONTEXT, options.seed());
        Path model = SyntheticModelWriter.write(directory.resolve("model-" + options.model() + "-" + TurnTtftOptions.CONTEXT), shape);
        JlamaModelDirectory inspected = JlamaModelDirectory.inspect(model, options.blockTokens());
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        ServerOptions prefill = new ServerOptions("prefill", model, directory.resolve("pages-prefill"), options.backend(), 4, options.blockTokens(),
                secret, -1).withHandBack(true);
        ServerOptions decode = new ServerOptions("decode", model, directory.resolve("pages-decode"), options.backend(), 4, options.blockTokens(),
                secret, -1).withHandBack(true);
        List<String> jvm = options.bitIdentical() ? EngineProcess.JVM_OPTIONS : EngineProcess.FAST_JVM_OPTIONS;
        try (EngineProcess prefillJvm = EngineProcess.start(prefill, classPath, directory.resolve("prefill.log"), READY_SECONDS, jvm);
                EngineProcess decodeJvm = EngineProcess.start(decode, classPath, directory.resolve("decode.log"), READY_SECONDS, jvm)) {
            Pairs pairs = new Pairs(options, inspected, prefillJvm, decodeJvm);
            for (int round = 0; round < options.warmups(); round++) {
                for (int history : options.histories()) {
                    pairs.measure(history, round);
                }
            }
            List<TurnTtftReport.Sample> samples = new ArrayList<>();
            for (int rep = 0; rep < options.repetitions(); rep++) {
                for (int history : options.histories()) {
                    samples.add(pairs.measure(history, rep));
                }
            }
            return new TurnTtftReport(options, jvm, samples, inspected.bytesPerToken());
        }
    }

    /** Times one handed-back and one recomputed second turn of the same conversation. */
    private static final class Pairs
    {
        private final TurnTtftOptions options;
        private final JlamaModelDirectory shape;
        private final EngineProcess prefill;
        private final EngineProcess decode;
        private final SplittableRandom random;
        private final String mode;
        private int next;

        Pairs(TurnTtftOptions options, JlamaModelDirectory shape, EngineProcess prefill, EngineProcess decode)
        {
            this.options = options;
            this.shape = shape;
            this.prefill = prefill;
            this.decode = decode;
            this.random = new SplittableRandom(options.seed());
            this.mode = options.mode().toUpperCase(Locale.ROOT);
        }

        TurnTtftReport.Sample measure(int history, int round)
        {
            // the first turn's prompt and first token make the history the decoder holds and hands back
            int[] first = DisaggregatedRun.prompt(random, history - 1, shape);
            int[] added = random.ints(TurnTtftOptions.NEW_TOKENS, SyntheticModel.FIRST_ORDINARY_TOKEN, shape.vocabulary()).toArray();
            String n = Integer.toString(next++);
            String back = "back-" + n;
            String again = "again-" + n;
            // the hand-back's first turn last, so that its lease is fresh when the second turns start
            ObjectNode recomputeFirst = firstTurn(again, first, false);
            ObjectNode handBack = firstTurn(back, first, true);
            int[] second = secondPrompt(first, handBack, added);
            Turn handedBack;
            Turn recomputed;
            if (round % 2 == 0) {
                handedBack = secondTurn(back, second, handBack);
                recomputed = secondTurn(again, second, null);
            }
            else {
                recomputed = secondTurn(again, second, null);
                handedBack = secondTurn(back, second, handBack);
            }
            for (String conversation : List.of(back, again)) {
                prefill.request(command("forget", "forget-" + conversation).put("conversation", conversation), REQUEST_SECONDS);
                decode.request(command("forget", "forget-" + conversation).put("conversation", conversation), REQUEST_SECONDS);
            }
            boolean identical = recomputeFirst.path("tokens").equals(handBack.path("tokens"))
                    && handedBack.first().path("token").equals(recomputed.first().path("token"))
                    && handedBack.first().path("digest").equals(recomputed.first().path("digest"))
                    && handedBack.decoded().path("tokens").equals(recomputed.decoded().path("tokens"))
                    && handedBack.decoded().path("digests").equals(recomputed.decoded().path("digests"));
            return new TurnTtftReport.Sample(history, handedBack.nanos(), recomputed.nanos(), handedBack.first().path("handBackNanos").asLong(),
                    handedBack.first().path("prefillNanos").asLong(), recomputed.first().path("prefillNanos").asLong(),
                    handedBack.first().path("handBackBlocks").asInt(), second.length - handedBack.first().path("computedFrom").asInt(), identical);
        }

        /** The untimed first turn: prefilled (kept by the prefill JVM for the hand-back), decoded one step, kept by the decoder. */
        private ObjectNode firstTurn(String conversation, int[] prompt, boolean handBack)
        {
            ObjectNode command = (ObjectNode) command("prefill", conversation + "-1").set("prompt", array(prompt));
            if (handBack) {
                command.put("conversation", conversation).put("mode", mode);
            }
            ObjectNode first = checked(prefill.request(command, REQUEST_SECONDS));
            ObjectNode decoded = checked(decode.request(decodeCommand(conversation + "-1", conversation, prompt, first).put("handBack", handBack),
                    REQUEST_SECONDS));
            return decoded.put("firstToken", first.path("token").asInt());
        }

        /** The second turn, timed from the prefill request to the decoder's first step. */
        private Turn secondTurn(String conversation, int[] prompt, ObjectNode handBack)
        {
            ObjectNode command = (ObjectNode) command("prefill", conversation + "-2").set("prompt", array(prompt));
            if (handBack != null) {
                command.put("conversation", conversation).put("mode", mode).put("handBack", handBack.path("handBack").asText())
                        .put("handBackId", handBack.path("handBackId").asText()).put("handBackTokens", handBack.path("handBackTokens").asInt());
            }
            long start = System.nanoTime();
            ObjectNode first = checked(prefill.request(command, REQUEST_SECONDS));
            ObjectNode decoded = checked(decode.request(decodeCommand(conversation + "-2", conversation, prompt, first), REQUEST_SECONDS));
            return new Turn(first, decoded, System.nanoTime() - start);
        }

        private ObjectNode decodeCommand(String id, String conversation, int[] prompt, ObjectNode first)
        {
            return (ObjectNode) command("decode", id).put("promptLength", prompt.length).put("steps", 1).put("token", first.path("token").asInt())
                    .put("mode", mode).put("params", first.path("params").asText()).put("conversation", conversation).set("prompt", array(prompt));
        }
    }

    private record Turn(ObjectNode first, ObjectNode decoded, long nanos)
    {
    }

    /** The second turn's prompt: the first turn's prompt, its first token and the decoder's step, then the new tokens. */
    private static int[] secondPrompt(int[] first, ObjectNode decoded, int[] added)
    {
        int[] prompt = new int[first.length + 2 + added.length];
        System.arraycopy(first, 0, prompt, 0, first.length);
        prompt[first.length] = decoded.path("firstToken").asInt();
        prompt[first.length + 1] = decoded.path("tokens").path(0).asInt();
        System.arraycopy(added, 0, prompt, first.length + 2, added.length);
        return prompt;
    }

    private static ArrayNode array(int[] tokens)
    {
        ArrayNode array = Lines.JSON.createArrayNode();
        for (int token : tokens) {
            array.add(token);
        }
        return array;
    }

    private static ObjectNode checked(ObjectNode reply)
    {
        KvBridgeException.check(!reply.has("error"), ErrorCode.TRANSFER_FAILED, "benchmark request %s failed: %s: %s", reply.path("id").asText(),
                reply.path("error").asText(), reply.path("message").asText());
        return reply;
    }

    private static ObjectNode command(String op, String id)
    {
        return Lines.object().put("op", op).put("id", id);
    }
}
