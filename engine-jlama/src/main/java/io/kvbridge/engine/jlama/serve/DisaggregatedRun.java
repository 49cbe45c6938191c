package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.engine.jlama.JlamaModelDirectory;
import io.kvbridge.engine.jlama.SyntheticModel;
import io.kvbridge.engine.jlama.SyntheticModelWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The router of a disaggregated Jlama run: writes the model (or takes an existing model directory), starts a reference JVM, a prefill JVM
 * (or one per producer pipeline stage, {@link PrefillStages}) and a decode JVM alike, sends every prompt to prefill, hands the {@code TransferParams} JSON to
 * decode, and compares every generated token and every step's logits bits with the reference.
 * Up to {@link RunOptions#concurrency()} sessions are in flight at once, each engine holding a
 * session slot per session in flight.
 */
public final class DisaggregatedRun
{
    private static final int READY_SECONDS = 180;
    private static final int REQUEST_SECONDS = 300;

    private DisaggregatedRun()
    {
    }

    /**
     * Runs the sessions and audits them.
     *
     * @param options what to run.
     * @param directory where the model, the engines' pages and logs go.
     * @param classPath the engines' class path.
     * @return the audit.
     */
    public static RunReport run(RunOptions options, Path directory, String classPath)
    {
        try {
            // the engines' logs go here even when no model is written into it
            Files.createDirectories(directory);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot create the run's directory " + directory, e);
        }
        Path model = options.modelDirectory() != null ? options.modelDirectory()
                : SyntheticModelWriter.write(directory.resolve("model-" + options.model()), SyntheticModel.named(options.model(), options.seed()));
        // the shape, context and vocabulary come from the directory alike, whether the run wrote it or a user downloaded it
        JlamaModelDirectory shape = JlamaModelDirectory.inspect(model, options.blockTokens());
        KvBridgeException.check(options.maxPositions() <= shape.contextLength(), ErrorCode.INVALID_ARGUMENT,
                "prompts of up to %d tokens, %d turns and %d decode steps need up to %d positions but %s's context is %d; give shorter prompts",
                options.promptMax(), options.turns(), options.decodeTokens(), options.maxPositions(), model, shape.contextLength());
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        int slots = options.slots();
        ServerOptions reference = new ServerOptions("reference", model, directory.resolve("pages-reference"), options.backend(), 1,
                options.blockTokens(), secret, -1);
        ServerOptions prefill = new ServerOptions("prefill", model, directory.resolve("pages-prefill"), options.backend(), slots,
                options.blockTokens(), secret, options.corruptBlock());
        ServerOptions decode = new ServerOptions("decode", model, directory.resolve("pages-decode"), options.backend(), slots,
                options.blockTokens(), secret, options.corruptHandBack() ? 0 : -1).withHandBack(options.handBack());
        prefill = prefill.withHandBack(options.handBack());
        try (EngineProcess referenceJvm = EngineProcess.start(reference, classPath, directory.resolve("reference.log"), READY_SECONDS);
                PrefillStages prefillJvm = PrefillStages.start(prefill, options.producerPp(), classPath, directory, READY_SECONDS);
                EngineProcess decodeJvm = EngineProcess.start(decode, classPath, directory.resolve("decode.log"), READY_SECONDS)) {
            // the prompts are drawn before anything runs, so that they do not depend on the sessions' order of completion
            SplittableRandom random = new SplittableRandom(options.seed());
            List<int[]> prompts = new ArrayList<>();
            List<List<int[]>> followUps = new ArrayList<>();
            for (int s = 0; s < options.sessions(); s++) {
                prompts.add(prompt(random, random.nextInt(options.promptMin(), options.promptMax() + 1), shape));
                List<int[]> later = new ArrayList<>();
                for (int turn = 1; turn < options.turns(); turn++) {
                    later.add(userTokens(random, random.nextInt(RunOptions.FOLLOW_UP_MIN, RunOptions.FOLLOW_UP_MAX + 1), shape));
                }
                followUps.add(later);
            }
            List<SessionResult> results = new ArrayList<>();
            try (ExecutorService inFlight = Executors.newFixedThreadPool(options.concurrency(), Thread.ofVirtual().name("jlama-session-", 0).factory())) {
                List<Future<List<SessionResult>>> futures = new ArrayList<>();
                for (int s = 0; s < options.sessions(); s++) {
                    int index = s;
                    futures.add(inFlight.submit(() -> conversation("session-" + index, options.modeOf(index), prompts.get(index), followUps.get(index),
                            options, shape, referenceJvm, prefillJvm, decodeJvm)));
                }
                for (Future<List<SessionResult>> future : futures) {
                    results.addAll(await(future));
                }
            }
            Idle idle = awaitIdle(prefillJvm, decodeJvm, results.size());
            return new RunReport(options, results, idle.prefill(), idle.decode(), idle.decoderForwarded());
        }
    }

    /**
     * Draws a prompt: the begin token, then ordinary tokens.
     *
     * @param random the draw.
     * @param length tokens.
     * @param shape the model, for its begin token and vocabulary.
     * @return the prompt.
     */
    static int[] prompt(SplittableRandom random, int length, JlamaModelDirectory shape)
    {
        int[] prompt = new int[length];
        prompt[0] = shape.bosToken();
        for (int i = 1; i < length; i++) {
            prompt[i] = random.nextInt(SyntheticModel.FIRST_ORDINARY_TOKEN, shape.vocabulary());
        }
        return prompt;
    }

    /** A later turn's new user tokens: ordinary tokens only. */
    private static int[] userTokens(SplittableRandom random, int length, JlamaModelDirectory shape)
    {
        return random.ints(length, SyntheticModel.FIRST_ORDINARY_TOKEN, shape.vocabulary()).toArray();
    }

    /** Every request a session makes has its own deadline, so a session's result comes within their sum. */
    private static List<SessionResult> await(Future<List<SessionResult>> future)
    {
        try {
            return future.get(8L * REQUEST_SECONDS, TimeUnit.SECONDS);
        }
        catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException(e.getCause());
        }
        catch (TimeoutException e) {
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, "a session did not finish within " + 8 * REQUEST_SECONDS + " s", e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, "interrupted while waiting for a session", e);
        }
    }

    /** Serves a session's turns one after another: each later turn repeats the earlier one's prompt and output, then new tokens. */
    private static List<SessionResult> conversation(String id, String mode, int[] prompt, List<int[]> followUps, RunOptions options,
            JlamaModelDirectory shape, EngineProcess reference, PrefillStages prefill, EngineProcess decode)
    {
        String conversation = followUps.isEmpty() ? null : id;
        List<SessionResult> turns = new ArrayList<>();
        int[] turnPrompt = prompt;
        ObjectNode handBack = null;
        try {
            for (int turn = 0; turn <= followUps.size(); turn++) {
                String turnId = followUps.isEmpty() ? id : id + "-turn-" + (turn + 1);
                HandBackTurn.Plan plan = new HandBackTurn.Plan(options.handBack(), handBack, turn < followUps.size());
                SessionResult result = turn(turnId, mode, turnPrompt, conversation, options, shape, reference, prefill, decode, plan);
                handBack = plan.next();
                turns.add(result);
                if (result.error() != null || turn == followUps.size()) {
                    break;
                }
                turnPrompt = concat(turnPrompt, result.tokens(), followUps.get(turn));
            }
        }
        finally {
            if (conversation != null) {
                decode.request(command("forget", id + "-forget").put("conversation", conversation), REQUEST_SECONDS);
                if (options.handBack()) {
                    prefill.single().request(command("forget", id + "-forget").put("conversation", conversation), REQUEST_SECONDS);
                }
            }
        }
        return turns;
    }

    private static int[] concat(int[] prompt, List<Integer> generated, int[] followUp)
    {
        int[] next = new int[prompt.length + generated.size() + followUp.length];
        System.arraycopy(prompt, 0, next, 0, prompt.length);
        for (int i = 0; i < generated.size(); i++) {
            next[prompt.length + i] = generated.get(i);
        }
        System.arraycopy(followUp, 0, next, prompt.length + generated.size(), followUp.length);
        return next;
    }

    private static SessionResult turn(String id, String mode, int[] prompt, String conversation, RunOptions options, JlamaModelDirectory shape,
            EngineProcess reference, PrefillStages prefill, EngineProcess decode, HandBackTurn.Plan plan)
    {
        ArrayNode tokens = Lines.JSON.valueToTree(prompt);
        ObjectNode expected = reference.request(command("generate", id).put("steps", options.decodeTokens()).set("prompt", tokens), REQUEST_SECONDS);
        try {
            return disaggregated(id, mode, prompt, conversation, options, shape, tokens, expected, prefill, decode, plan);
        }
        finally {
            // the request's prefill slot goes back to the router's pool once its decode ended, whichever way
            prefill.finished(id);
        }
    }

    /** Prefill, hand-off and decode of one turn, compared with the reference's {@code expected} answer. */
    private static SessionResult disaggregated(String id, String mode, int[] prompt, String conversation, RunOptions options, JlamaModelDirectory shape,
            ArrayNode tokens, ObjectNode expected, PrefillStages prefill, EngineProcess decode, HandBackTurn.Plan plan)
    {
        List<Integer> referenceTokens = ints(expected.path("tokens"));
        ObjectNode decodeCommand = command("decode", id).put("promptLength", prompt.length).put("steps", options.decodeTokens()).put("mode", mode);
        if (conversation != null) {
            decodeCommand.put("conversation", conversation).set("prompt", tokens);
        }
        long startMicros = epochMicros();
        ObjectNode first;
        ObjectNode decoded;
        if (options.streamLayers() && plan.on() && conversation != null) {
            // streamed and handed back: the prefill JVM receives what it lacks, then hands each layer of the new tokens' pass forward
            StreamedHandoff.Replies replies = HandBackTurn.streamed(id, mode, conversation, tokens, plan, decodeCommand, prefill.single(), decode,
                    REQUEST_SECONDS);
            first = replies.prefill();
            decoded = replies.decode();
        }
        else if (options.streamLayers()) {
            StreamedHandoff.Replies replies = StreamedHandoff.run(id, tokens, decodeCommand, prefill, decode, REQUEST_SECONDS);
            first = replies.prefill();
            decoded = replies.decode();
        }
        else if (plan.on() && conversation != null) {
            // the prefill JVM keeps the conversation: a later turn carries the decoder's hand-back and computes only the new tokens
            first = HandBackTurn.prefill(id, mode, conversation, tokens, plan, prefill.single(), decode, REQUEST_SECONDS);
            decoded = first.has("error") ? null : decode.request(decodeCommand.put("token", first.path("token").asInt())
                    .put("params", first.path("params").asText()).put("handBack", plan.handBackAfter()), REQUEST_SECONDS);
        }
        else {
            first = prefill.prefill(id, tokens, REQUEST_SECONDS);
            decoded = first.has("error") ? null
                    : decode.request(decodeCommand.put("token", first.path("token").asInt()).put("params", first.path("params").asText()), REQUEST_SECONDS);
        }
        if (first.has("error")) {
            return failed(id, mode, prompt.length, referenceTokens, "prefill: " + first.path("message").asText());
        }
        if (decoded.has("error")) {
            prefill.abort(id, REQUEST_SECONDS);
            return failed(id, mode, prompt.length, referenceTokens, "decode: " + decoded.path("error").asText() + ": " + decoded.path("message").asText());
        }
        plan.decoded(decoded);
        List<Integer> generated = new ArrayList<>();
        generated.add(first.path("token").asInt());
        generated.addAll(ints(decoded.path("tokens")));
        List<String> digests = new ArrayList<>();
        digests.add(first.path("digest").asText());
        decoded.path("digests").forEach(d -> digests.add(d.asText()));
        List<Integer> mismatched = new ArrayList<>();
        for (int step = 0; step < referenceTokens.size(); step++) {
            boolean sameToken = step < generated.size() && generated.get(step).equals(referenceTokens.get(step));
            boolean sameBits = step < digests.size() && digests.get(step).equals(expected.path("digests").path(step).asText());
            if (!(sameToken && sameBits)) {
                mismatched.add(step);
            }
        }
        int cachedTokens = decoded.path("cachedTokens").asInt();
        long blocks = (prompt.length + options.blockTokens() - 1) / options.blockTokens() - cachedTokens / options.blockTokens();
        long bytes = blocks * options.blockTokens() * shape.bytesPerToken();
        return new SessionResult(id, mode, prompt.length, generated, referenceTokens, mismatched, first.path("prefillNanos").asLong(),
                decoded.path("transferNanos").asLong(), decoded.path("firstStepNanos").asLong(), bytes, decoded.path("forwardedTokens").asLong(), null,
                cachedTokens, (decoded.path("readyMicros").asLong() - startMicros) * 1_000L)
                .withHandBack(first.path("computedFrom").asInt(), first.path("handBackBlocks").asLong() * options.blockTokens() * shape.bytesPerToken());
    }

    private static SessionResult failed(String id, String mode, int promptTokens, List<Integer> referenceTokens, String error)
    {
        return new SessionResult(id, mode, promptTokens, List.of(), referenceTokens, List.of(), 0, 0, 0, 0, 0, error, 0, 0);
    }

    private record Idle(ObjectNode prefill, ObjectNode decode, long decoderForwarded)
    {
    }

    /** Waits (bounded) until both engines hold no request, lease or transfer, and the producer freed every session's slot. */
    private static Idle awaitIdle(PrefillStages prefill, EngineProcess decode, int sessions)
    {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            ObjectNode p = prefill.audit(REQUEST_SECONDS);
            ObjectNode d = decode.request(command("audit", "audit"), REQUEST_SECONDS);
            boolean idle = p.path("idle").asBoolean() && d.path("idle").asBoolean() && p.path("freed").asInt() == sessions;
            if (idle || System.nanoTime() > deadline) {
                return new Idle(p, d, d.path("forwardedTokens").asLong());
            }
            try {
                Thread.sleep(50);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Idle(p, d, d.path("forwardedTokens").asLong());
            }
        }
    }

    /** The wall clock in microseconds, which the decoder JVM's clock also reads: prefill start to decode-ready spans both JVMs. */
    static long epochMicros()
    {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    private static ObjectNode command(String op, String id)
    {
        return Lines.object().put("op", op).put("id", id);
    }

    private static List<Integer> ints(JsonNode array)
    {
        List<Integer> values = new ArrayList<>();
        array.forEach(v -> values.add(v.asInt()));
        return values;
    }
}
