package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.json.TransferParamsJson;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The producer's prefill JVMs as the router sees them: one, or one per pipeline stage. Each stage
 * computes the whole prompt but registers and hands over only its stage's layers, and binds its own
 * loopback side channel, which every stage is told. With several stages the router hands out the
 * session slots (one per session in flight, so that every stage's parameters name the same
 * blocks), prefills all stages at once, and hands the decoder stage 0's parameters with every
 * other stage's epoch and pull key merged in ({@link TransferParams#withEpochsOf}), as an engine's
 * router merges its stages' parameters.
 */
final class PrefillStages implements AutoCloseable
{
    private final List<EngineProcess> stages;
    private final BlockingQueue<Integer> freeSlots = new LinkedBlockingQueue<>();
    private final Map<String, Integer> slotOfRequest = new ConcurrentHashMap<>();

    private PrefillStages(List<EngineProcess> stages, int slots)
    {
        this.stages = stages;
        for (int slot = 0; slot < slots; slot++) {
            freeSlots.add(slot);
        }
    }

    /**
     * Starts the prefill JVMs.
     *
     * @param template the options of an unsplit prefill JVM.
     * @param ppSize the stages.
     * @param classPath the engines' class path.
     * @param directory where each stage's pages and log go.
     * @param readySeconds how long a JVM may take to start.
     * @return the stages, every one ready.
     */
    static PrefillStages start(ServerOptions template, int ppSize, String classPath, Path directory, int readySeconds)
    {
        if (ppSize == 1) {
            return new PrefillStages(List.of(EngineProcess.start(template, classPath, directory.resolve("prefill.log"), readySeconds)), 0);
        }
        List<Integer> ports = freeLoopbackPorts(ppSize);
        List<EngineProcess> started = new ArrayList<>();
        try {
            for (int stage = 0; stage < ppSize; stage++) {
                ServerOptions options = new ServerOptions(template.role(), template.modelDirectory(), directory.resolve("pages-prefill-pp" + stage),
                        template.backend(), template.slots(), template.blockTokens(), template.secret(), template.corruptBlock(), stage, ppSize, ports);
                started.add(EngineProcess.start(options, classPath, directory.resolve("prefill-pp" + stage + ".log"), readySeconds));
            }
            return new PrefillStages(List.copyOf(started), template.slots());
        }
        catch (RuntimeException e) {
            started.forEach(EngineProcess::close);
            throw e;
        }
    }

    /**
     * Wraps one prefill JVM started with options of the caller's choice (a benchmark's JVM flags).
     *
     * @param prefill the unsplit prefill JVM, ready.
     * @return the stages: that one.
     */
    static PrefillStages of(EngineProcess prefill)
    {
        return new PrefillStages(List.of(prefill), 0);
    }

    /**
     * Runs a prompt's prefill on every stage at once, into one session slot the router hands out,
     * and answers as one prefill JVM would: stage 0's first token and logits digest, the longest
     * stage's prefill time and the merged parameters. Every stage must have computed the same first
     * token and logits bits and named the same blocks; when any stage fails, the stages that
     * prefilled have the request aborted. The slot stays the request's until {@link #finished}.
     *
     * @param id the request id.
     * @param prompt the prompt's tokens.
     * @param seconds each stage's deadline.
     * @return the reply, or one with {@code error} and {@code message}.
     */
    ObjectNode prefill(String id, ArrayNode prompt, int seconds)
    {
        return prefill(id, prompt, seconds, null);
    }

    /**
     * Runs a prompt's prefill as {@link #prefill(String, ArrayNode, int)} does; with
     * {@code started} given, streamed: every stage announces the request before its forward pass and
     * sends its parameters at once, and once every stage did, {@code started} gets them merged as
     * the reply's would be, while the stages still compute, so that the decoder starts receiving.
     *
     * @param id the request id.
     * @param prompt the prompt's tokens.
     * @param seconds each stage's deadline.
     * @param started given the merged parameters' JSON of a streamed prefill, on a stage's thread;
     *     null for a prefill that hands over once it finished.
     * @return the reply, or one with {@code error} and {@code message}.
     */
    ObjectNode prefill(String id, ArrayNode prompt, int seconds, Consumer<String> started)
    {
        StartedStages early = started == null ? null : new StartedStages(stages.size(), started);
        if (stages.size() == 1) {
            ObjectNode command = (ObjectNode) command("prefill", id).put("stream", early != null).set("prompt", prompt);
            return stages.getFirst().request(command, seconds, message -> early.started(0, message));
        }
        int slot = takeSlot(id, seconds);
        // all stages at once: each finishes (and starts its lease) when the others do, as the stages of one engine would
        List<ObjectNode> replies;
        try (ExecutorService each = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<ObjectNode>> futures = stages.stream()
                    .map(stage -> each.submit(() -> stage.request(
                            (ObjectNode) command("prefill", id).put("slot", slot).put("stream", early != null).set("prompt", prompt), seconds,
                            message -> early.started(stages.indexOf(stage), message))))
                    .toList();
            replies = futures.stream().map(PrefillStages::await).toList();
        }
        ObjectNode first = replies.getFirst();
        String problem = null;
        String code = "INTERNAL";
        TransferParams merged = first.has("error") ? null : TransferParamsJson.read(first.path("params").asText());
        long prefillNanos = 0;
        for (int stage = 0; stage < stages.size() && problem == null; stage++) {
            ObjectNode reply = replies.get(stage);
            problem = reply.has("error") ? reply.path("message").asText()
                    : stage == 0 ? null : differs(first, reply, merged);
            if (problem == null) {
                merged = stage == 0 ? merged : merged.withEpochsOf(TransferParamsJson.read(reply.path("params").asText()));
                prefillNanos = Math.max(prefillNanos, reply.path("prefillNanos").asLong());
            }
            else {
                code = reply.has("error") ? reply.path("error").asText() : code;
                problem = "pipeline stage " + stage + ": " + problem;
            }
        }
        if (problem != null) {
            for (int stage = 0; stage < stages.size(); stage++) {
                if (!replies.get(stage).has("error")) {
                    stages.get(stage).request(command("abort", id), seconds);
                }
            }
            finished(id);
            return Lines.object().put("error", code).put("message", problem);
        }
        return first.put("prefillNanos", prefillNanos).put("params", TransferParamsJson.write(merged));
    }

    /** Collects every stage's early parameters of a streamed prefill and hands them on, merged, once all came. */
    private static final class StartedStages
    {
        private final TransferParams[] params;
        private final Consumer<String> started;
        private int missing;

        StartedStages(int stages, Consumer<String> started)
        {
            this.params = new TransferParams[stages];
            this.started = started;
            this.missing = stages;
        }

        void started(int stage, ObjectNode message)
        {
            TransferParams merged;
            synchronized (this) {
                params[stage] = TransferParamsJson.read(message.path("params").asText());
                if (--missing > 0) {
                    return;
                }
                merged = params[0];
                for (int other = 1; other < params.length; other++) {
                    merged = merged.withEpochsOf(params[other]);
                }
            }
            started.accept(TransferParamsJson.write(merged));
        }
    }

    /**
     * Returns the one prefill JVM of an unsplit producer, for the commands only it serves (a conversation's turns with the hand-back).
     *
     * @return the prefill JVM.
     */
    EngineProcess single()
    {
        KvBridgeException.check(stages.size() == 1, ErrorCode.INVALID_ARGUMENT, "%d prefill stages: a conversation's hand-back needs one prefill JVM",
                stages.size());
        return stages.getFirst();
    }

    /**
     * Returns a request's session slot to the router's pool: its decode ended, or it failed. The
     * stages free the slot itself when kvbridge reports the request freed; a later prefill into it
     * waits for that.
     *
     * @param id the request.
     */
    void finished(String id)
    {
        Integer slot = slotOfRequest.remove(id);
        if (slot != null) {
            freeSlots.add(slot);
        }
    }

    private int takeSlot(String id, int seconds)
    {
        try {
            Integer slot = freeSlots.poll(seconds, TimeUnit.SECONDS);
            KvBridgeException.check(slot != null, ErrorCode.DEADLINE_EXCEEDED, "request %s: no prefill session slot came free within %d s", id, seconds);
            slotOfRequest.put(id, slot);
            return slot;
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, "interrupted while waiting for a prefill session slot", e);
        }
    }

    private static ObjectNode await(Future<ObjectNode> reply)
    {
        try {
            return reply.get();
        }
        catch (ExecutionException e) {
            return Lines.object().put("error", "INTERNAL").put("message", e.getCause().toString());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Lines.object().put("error", "INTERNAL").put("message", "interrupted while waiting for a stage's prefill");
        }
    }

    /** What makes a later stage's prefill disagree with stage 0's, or null: every stage ran the same model on the same prompt into the same slot. */
    private static String differs(ObjectNode first, ObjectNode reply, TransferParams firstParams)
    {
        if (reply.path("token").asInt() != first.path("token").asInt() || !reply.path("digest").asText().equals(first.path("digest").asText())) {
            return "first token " + reply.path("token").asInt() + " (logits " + reply.path("digest").asText() + ") differs from stage 0's "
                    + first.path("token").asInt() + " (" + first.path("digest").asText() + ")";
        }
        TransferParams params = TransferParamsJson.read(reply.path("params").asText());
        if (!params.blockIds().equals(firstParams.blockIds())) {
            return "blocks " + params.blockIds() + " differ from stage 0's " + firstParams.blockIds();
        }
        return null;
    }

    /**
     * Gives up on a request on every stage (the decoder refused it): kvbridge frees its blocks.
     *
     * @param id the request.
     * @param seconds each stage's deadline.
     */
    void abort(String id, int seconds)
    {
        for (EngineProcess stage : stages) {
            stage.request(command("abort", id), seconds);
        }
    }

    /**
     * Returns the stages' audits as one: idle when every stage is, the slots freed by the stage that
     * freed fewest, and each stage's own audit under {@code stages}.
     *
     * @param seconds each stage's deadline.
     * @return the audit.
     */
    ObjectNode audit(int seconds)
    {
        List<ObjectNode> audits = stages.stream().map(stage -> stage.request(command("audit", "audit"), seconds)).toList();
        if (audits.size() == 1) {
            return audits.getFirst();
        }
        ObjectNode merged = Lines.object().put("idle", audits.stream().allMatch(a -> a.path("idle").asBoolean()))
                .put("freed", audits.stream().mapToInt(a -> a.path("freed").asInt()).min().orElse(0))
                .put("connector", String.join("; ", audits.stream().map(a -> a.path("connector").asText()).toList()));
        merged.putArray("stages").addAll(audits);
        return merged;
    }

    @Override
    public void close()
    {
        stages.forEach(EngineProcess::close);
    }

    private static ObjectNode command(String op, String id)
    {
        return Lines.object().put("op", op).put("id", id);
    }

    /** Ports for the stages' side channels, free when asked, held open until all are chosen so that no two stages get the same port. */
    private static List<Integer> freeLoopbackPorts(int count)
    {
        List<ServerSocket> held = new ArrayList<>();
        try {
            List<Integer> ports = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(socket);
                ports.add(socket.getLocalPort());
            }
            return ports;
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot find free loopback ports for the prefill stages' side channels", e);
        }
        finally {
            for (ServerSocket socket : held) {
                try {
                    socket.close();
                }
                catch (IOException ignored) {
                    // nothing was accepted on it
                }
            }
        }
    }
}
