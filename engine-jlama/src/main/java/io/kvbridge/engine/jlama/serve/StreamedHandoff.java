package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * One request's streamed hand-off at the router: the prefill JVMs announce the request before
 * their forward pass and send its parameters at once; the router hands them to the decoder, which
 * starts receiving while the layers are computed; when prefill ends, the router tells the decoder
 * the first token (or the prefill's failure), and the decoder decodes once its blocks landed.
 */
final class StreamedHandoff
{
    private StreamedHandoff()
    {
    }

    /**
     * The prefill's reply and the decoder's.
     *
     * @param prefill the prefill's reply (first token, digest, prefill time), or its error.
     * @param decode the decoder's reply, or its error; null when the decoder never heard of the request.
     */
    record Replies(ObjectNode prefill, ObjectNode decode)
    {
    }

    /**
     * Runs one request's streamed prefill and decode.
     *
     * @param id the request.
     * @param prompt the prompt's tokens.
     * @param decodeCommand the decoder's {@code decode} command without {@code token} and {@code params}.
     * @param prefill the prefill JVMs.
     * @param decode the decode JVM.
     * @param seconds each request's deadline.
     * @return both replies.
     */
    static Replies run(String id, ArrayNode prompt, ObjectNode decodeCommand, PrefillStages prefill, EngineProcess decode, int seconds)
    {
        return run(id, decodeCommand, started -> prefill.prefill(id, prompt, seconds, started), decode, seconds);
    }

    /**
     * Runs one request's streamed prefill and decode, the prefill sent by the caller (a
     * conversation's turn, with its hand-back).
     *
     * @param id the request.
     * @param decodeCommand the decoder's {@code decode} command without {@code token} and {@code params}.
     * @param prefill sends the streamed prefill, given what takes its parameters' JSON once they come, and answers its reply.
     * @param decode the decode JVM.
     * @param seconds each request's deadline.
     * @return both replies.
     */
    static Replies run(String id, ObjectNode decodeCommand, Function<Consumer<String>, ObjectNode> prefill, EngineProcess decode, int seconds)
    {
        AtomicReference<CompletableFuture<ObjectNode>> decoded = new AtomicReference<>();
        // sent on the stage's thread as its parameters come, so the decode command reaches the decoder before the first token does
        ObjectNode first = prefill.apply(params -> decoded.set(decode.submit(decodeCommand.put("params", params), seconds)));
        if (decoded.get() == null) {
            // the prefill failed before it announced the request: the decoder never heard of it
            return new Replies(first.has("error") ? first : Lines.object().put("error", "PROTOCOL").put("message",
                    "session " + id + ": the prefill answered without sending its parameters first, as a streamed prefill must"), null);
        }
        ObjectNode outcome = Lines.object().put("op", "first-token").put("id", id + "-first-token").put("session", id);
        if (first.has("error")) {
            outcome.put("error", first.path("message").asText());
        }
        else {
            outcome.put("token", first.path("token").asInt());
        }
        ObjectNode said = decode.request(outcome, seconds);
        if (said.has("error") && !decoded.get().isDone()) {
            return new Replies(first, said);
        }
        return new Replies(first, await(decoded.get(), id, seconds));
    }

    private static ObjectNode await(CompletableFuture<ObjectNode> decoded, String id, int seconds)
    {
        try {
            return decoded.get(seconds, TimeUnit.SECONDS);
        }
        catch (ExecutionException | TimeoutException e) {
            return Lines.object().put("error", "DEADLINE_EXCEEDED").put("message", "session " + id + ": the decoder answered nothing within " + seconds + " s");
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Lines.object().put("error", "DEADLINE_EXCEEDED").put("message", "session " + id + ": interrupted while waiting for the decoder");
        }
    }
}
