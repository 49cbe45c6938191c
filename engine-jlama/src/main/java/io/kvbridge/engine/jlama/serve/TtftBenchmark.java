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
 * Time to the decoder's first generated token, two ways, in the same two engine JVMs: disaggregated
 * (the prefill JVM runs the prompt, kvbridge moves its blocks, the decode JVM runs the first decode
 * step) and recomputed (the decode JVM runs the prompt's forward pass and the first step itself).
 * Both are timed at the router, from its first request to the reply holding the decoder's token,
 * in pairs whose order alternates, so that drift on a shared machine falls on both alike.
 */
public final class TtftBenchmark
{
    private static final int READY_SECONDS = 180;
    private static final int REQUEST_SECONDS = 300;

    private TtftBenchmark()
    {
    }

    /**
     * Runs the benchmark.
     *
     * @param options what to measure.
     * @param directory where the model, the engines' pages and logs go.
     * @param classPath the engines' class path.
     * @return every timed pair, by prompt length.
     */
    public static TtftReport run(TtftOptions options, Path directory, String classPath)
    {
        Path model = SyntheticModelWriter.write(directory.resolve("model-" + options.model()), SyntheticModel.named(options.model(), options.seed()));
        JlamaModelDirectory shape = JlamaModelDirectory.inspect(model, options.blockTokens());
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        ServerOptions prefill = new ServerOptions("prefill", model, directory.resolve("pages-prefill"), options.backend(), 2, options.blockTokens(),
                secret, -1);
        ServerOptions decode = new ServerOptions("decode", model, directory.resolve("pages-decode"), options.backend(), 2, options.blockTokens(),
                secret, -1);
        List<String> jvm = options.bitIdentical() ? EngineProcess.JVM_OPTIONS : EngineProcess.FAST_JVM_OPTIONS;
        try (EngineProcess prefillJvm = EngineProcess.start(prefill, classPath, directory.resolve("prefill.log"), READY_SECONDS, jvm);
                EngineProcess decodeJvm = EngineProcess.start(decode, classPath, directory.resolve("decode.log"), READY_SECONDS, jvm)) {
            Pairs pairs = new Pairs(options, shape, prefillJvm, decodeJvm);
            for (int round = 0; round < options.warmups(); round++) {
                for (int length : options.promptLengths()) {
                    pairs.measure(length, round);
                }
            }
            List<TtftReport.Sample> samples = new ArrayList<>();
            for (int rep = 0; rep < options.repetitions(); rep++) {
                for (int length : options.promptLengths()) {
                    samples.add(pairs.measure(length, rep));
                }
            }
            long bytesPerToken = shape.bytesPerToken();
            return new TtftReport(options, jvm, samples, bytesPerToken);
        }
    }

    /** Times one disaggregated and one recomputed first token for the same prompt. */
    private static final class Pairs
    {
        private final TtftOptions options;
        private final JlamaModelDirectory shape;
        private final EngineProcess prefill;
        private final EngineProcess decode;
        private final SplittableRandom random;
        private int next;

        Pairs(TtftOptions options, JlamaModelDirectory shape, EngineProcess prefill, EngineProcess decode)
        {
            this.options = options;
            this.shape = shape;
            this.prefill = prefill;
            this.decode = decode;
            this.random = new SplittableRandom(options.seed());
        }

        TtftReport.Sample measure(int length, int round)
        {
            int[] prompt = DisaggregatedRun.prompt(random, length, shape);
            String id = "ttft-" + next++;
            ArrayNode tokens = Lines.JSON.valueToTree(prompt);
            ObjectNode first;
            ObjectNode decoded;
            ObjectNode recomputed;
            long disaggregatedNanos;
            long recomputeNanos;
            // alternate which runs first, so that neither always follows the other's garbage or page faults
            if (round % 2 == 0) {
                long start = System.nanoTime();
                first = checked(prefill.request((ObjectNode) command("prefill", id).set("prompt", tokens), REQUEST_SECONDS));
                decoded = checked(decode.request(decodeCommand(id, prompt.length, first), REQUEST_SECONDS));
                disaggregatedNanos = System.nanoTime() - start;
                start = System.nanoTime();
                recomputed = checked(decode.request(generateCommand(id, tokens), REQUEST_SECONDS));
                recomputeNanos = System.nanoTime() - start;
            }
            else {
                long start = System.nanoTime();
                recomputed = checked(decode.request(generateCommand(id, tokens), REQUEST_SECONDS));
                recomputeNanos = System.nanoTime() - start;
                start = System.nanoTime();
                first = checked(prefill.request((ObjectNode) command("prefill", id).set("prompt", tokens), REQUEST_SECONDS));
                decoded = checked(decode.request(decodeCommand(id, prompt.length, first), REQUEST_SECONDS));
                disaggregatedNanos = System.nanoTime() - start;
            }
            // the decoder's first token and its logits bits, both ways, and the prefill's token before it
            boolean identical = first.path("token").asInt() == recomputed.path("tokens").path(0).asInt()
                    && first.path("digest").asText().equals(recomputed.path("digests").path(0).asText())
                    && decoded.path("tokens").path(0).asInt() == recomputed.path("tokens").path(1).asInt()
                    && decoded.path("digests").path(0).asText().equals(recomputed.path("digests").path(1).asText());
            return new TtftReport.Sample(length, disaggregatedNanos, recomputeNanos, first.path("prefillNanos").asLong(),
                    decoded.path("transferNanos").asLong(), decoded.path("firstStepNanos").asLong(), recomputed.path("prefillNanos").asLong(),
                    recomputed.path("firstStepNanos").asLong(), identical);
        }

        private ObjectNode decodeCommand(String id, int promptLength, ObjectNode first)
        {
            return command("decode", id).put("promptLength", promptLength).put("steps", 1).put("token", first.path("token").asInt())
                    .put("mode", options.mode().toUpperCase(Locale.ROOT)).put("params", first.path("params").asText());
        }

        private static ObjectNode generateCommand(String id, ArrayNode tokens)
        {
            return (ObjectNode) command("generate", "recompute-" + id).put("steps", 1).set("prompt", tokens);
        }
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
