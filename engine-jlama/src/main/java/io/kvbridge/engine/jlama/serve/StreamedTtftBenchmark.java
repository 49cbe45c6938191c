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
import java.util.function.Consumer;

/**
 * Decode-ready and first-token times of a streamed prefill against a whole one, in the same two
 * engine JVMs: streamed, the prefill JVM announces the request before its forward pass and the
 * decoder receives each layer as Jlama completes it ({@link StreamedHandoff}); whole, the prefill
 * JVM hands over once its pass ended. Both are timed from the router sending the prompt, in pairs
 * over the same prompt whose order alternates, so that drift on a shared machine falls on both
 * alike; each pair's first token and the decoder's step must carry the same logits bits both ways.
 */
public final class StreamedTtftBenchmark
{
    private static final int READY_SECONDS = 180;
    private static final int REQUEST_SECONDS = 600;
    /** Warm-up rounds run the lengths up to this only. */
    private static final int WARMUP_MAX_TOKENS = 1024;

    private StreamedTtftBenchmark()
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
    public static StreamedTtftReport run(StreamedTtftOptions options, Path directory, String classPath)
    {
        return run(options, directory, classPath, pair -> {
        });
    }

    /**
     * Runs the benchmark, telling each timed pair as it is measured (a long run's partial results).
     *
     * @param options what to measure.
     * @param directory where the model, the engines' pages and logs go.
     * @param classPath the engines' class path.
     * @param measured given each timed pair, on the caller's thread.
     * @return every timed pair, by prompt length.
     */
    public static StreamedTtftReport run(StreamedTtftOptions options, Path directory, String classPath, Consumer<StreamedTtftReport.Pair> measured)
    {
        SyntheticModel shape = SyntheticModel.named(options.model(), options.seed()).withContextLength(options.contextLength());
        Path model = SyntheticModelWriter.write(directory.resolve("model-" + options.model()), shape);
        // refuses a context whose page split a block would straddle, naming the split
        JlamaModelDirectory inspected = JlamaModelDirectory.inspect(model, options.blockTokens());
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        ServerOptions prefill = new ServerOptions("prefill", model, directory.resolve("pages-prefill"), options.backend(), 2, options.blockTokens(),
                secret, -1);
        ServerOptions decode = new ServerOptions("decode", model, directory.resolve("pages-decode"), options.backend(), 2, options.blockTokens(),
                secret, -1);
        List<String> jvm = new ArrayList<>(options.bitIdentical() ? EngineProcess.JVM_OPTIONS : EngineProcess.FAST_JVM_OPTIONS);
        // the engines' deadlines outlast the longest prefill the router waits for
        jvm.add("-D" + PrefillDeadlines.PROPERTY + "=" + REQUEST_SECONDS);
        if (options.chunkTokens() > 0) {
            // both JVMs alike: a chunk boundary changes the order of a prompt's sums, so the bits depend on it
            jvm.add("-Djlama.max_batch_size=" + options.chunkTokens());
        }
        try (PrefillStages prefillJvm = PrefillStages.of(EngineProcess.start(prefill, classPath, directory.resolve("prefill.log"), READY_SECONDS, jvm));
                EngineProcess decodeJvm = EngineProcess.start(decode, classPath, directory.resolve("decode.log"), READY_SECONDS, jvm)) {
            Pairs pairs = new Pairs(options, inspected, prefillJvm, decodeJvm);
            for (int round = 0; round < options.warmups(); round++) {
                // the JIT compiles the same code at every length: warming up on the long prompts would only double the run
                for (int length : options.promptLengths()) {
                    if (length <= WARMUP_MAX_TOKENS) {
                        pairs.measure(length, round);
                    }
                }
            }
            List<StreamedTtftReport.Pair> samples = new ArrayList<>();
            for (int rep = 0; rep < options.repetitions(); rep++) {
                for (int length : options.promptLengths()) {
                    StreamedTtftReport.Pair pair = pairs.measure(length, rep);
                    measured.accept(pair);
                    samples.add(pair);
                }
            }
            return new StreamedTtftReport(options, jvm, samples, inspected.layers(), inspected.paging().tokensPerPage(),
                    inspected.paging().contextPages());
        }
    }

    /** Times one streamed and one whole hand-off of the same prompt. */
    private static final class Pairs
    {
        private final StreamedTtftOptions options;
        private final JlamaModelDirectory shape;
        private final PrefillStages prefill;
        private final EngineProcess decode;
        private final SplittableRandom random;
        private int next;

        Pairs(StreamedTtftOptions options, JlamaModelDirectory shape, PrefillStages prefill, EngineProcess decode)
        {
            this.options = options;
            this.shape = shape;
            this.prefill = prefill;
            this.decode = decode;
            this.random = new SplittableRandom(options.seed());
        }

        StreamedTtftReport.Pair measure(int length, int round)
        {
            int[] prompt = DisaggregatedRun.prompt(random, length, shape);
            String id = "handoff-" + next++;
            ArrayNode tokens = Lines.JSON.valueToTree(prompt);
            StreamedTtftReport.Sample streamed;
            StreamedTtftReport.Sample whole;
            // alternate which runs first, so that neither always follows the other's garbage or page faults
            if (round % 2 == 0) {
                streamed = streamed(id + "-streamed", tokens);
                whole = whole(id + "-whole", tokens);
            }
            else {
                whole = whole(id + "-whole", tokens);
                streamed = streamed(id + "-streamed", tokens);
            }
            return new StreamedTtftReport.Pair(length, streamed, whole, streamed.sameBitsAs(whole));
        }

        private StreamedTtftReport.Sample streamed(String id, ArrayNode tokens)
        {
            long startMicros = DisaggregatedRun.epochMicros();
            long start = System.nanoTime();
            try {
                StreamedHandoff.Replies replies = StreamedHandoff.run(id, tokens, decodeCommand(id, tokens.size()), prefill, decode, REQUEST_SECONDS);
                return sample(checked(replies.prefill()), checked(replies.decode()), startMicros, System.nanoTime() - start);
            }
            finally {
                prefill.finished(id);
            }
        }

        private StreamedTtftReport.Sample whole(String id, ArrayNode tokens)
        {
            long startMicros = DisaggregatedRun.epochMicros();
            long start = System.nanoTime();
            try {
                ObjectNode first = checked(prefill.prefill(id, tokens, REQUEST_SECONDS));
                ObjectNode decoded = checked(decode.request(decodeCommand(id, tokens.size()).put("token", first.path("token").asInt())
                        .put("params", first.path("params").asText()), REQUEST_SECONDS));
                return sample(first, decoded, startMicros, System.nanoTime() - start);
            }
            finally {
                prefill.finished(id);
            }
        }

        private ObjectNode decodeCommand(String id, int promptLength)
        {
            return Lines.object().put("op", "decode").put("id", id).put("promptLength", promptLength).put("steps", 1)
                    .put("mode", options.mode().toUpperCase(Locale.ROOT));
        }

        private static StreamedTtftReport.Sample sample(ObjectNode first, ObjectNode decoded, long startMicros, long firstTokenNanos)
        {
            return new StreamedTtftReport.Sample((decoded.path("readyMicros").asLong() - startMicros) * 1_000L, firstTokenNanos,
                    first.path("prefillNanos").asLong(), decoded.path("transferNanos").asLong(), first.path("token").asInt(),
                    first.path("digest").asText(), decoded.path("tokens").path(0).asInt(), decoded.path("digests").path(0).asText());
        }
    }

    private static ObjectNode checked(ObjectNode reply)
    {
        KvBridgeException.check(reply != null && !reply.has("error"), ErrorCode.TRANSFER_FAILED, "benchmark request %s failed: %s: %s",
                reply == null ? "?" : reply.path("id").asText(), reply == null ? "no reply" : reply.path("error").asText(),
                reply == null ? "the decoder never heard of it" : reply.path("message").asText());
        return reply;
    }
}
