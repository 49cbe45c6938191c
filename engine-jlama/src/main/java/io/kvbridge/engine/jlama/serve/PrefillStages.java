package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.api.TransferParamsJson;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The producer's prefill JVMs as the router sees them: one, or one per pipeline stage. Each stage
 * computes the whole prompt but registers and hands over only its stage's layers, and binds its own
 * loopback side channel, which every stage is told; the router prefills stage 0 first, then each
 * later stage into the slot stage 0 took, and hands the decoder stage 0's parameters with every
 * other stage's epoch and pull key merged in ({@link TransferParams#withEpochsOf}), as an engine's
 * router merges its stages' parameters.
 */
final class PrefillStages implements AutoCloseable
{
    private final List<EngineProcess> stages;

    private PrefillStages(List<EngineProcess> stages)
    {
        this.stages = stages;
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
            return new PrefillStages(List.of(EngineProcess.start(template, classPath, directory.resolve("prefill.log"), readySeconds)));
        }
        List<Integer> ports = freeLoopbackPorts(ppSize);
        List<EngineProcess> started = new ArrayList<>();
        try {
            for (int stage = 0; stage < ppSize; stage++) {
                ServerOptions options = new ServerOptions(template.role(), template.modelDirectory(), directory.resolve("pages-prefill-pp" + stage),
                        template.backend(), template.slots(), template.blockTokens(), template.secret(), template.corruptBlock(), stage, ppSize, ports);
                started.add(EngineProcess.start(options, classPath, directory.resolve("prefill-pp" + stage + ".log"), readySeconds));
            }
            return new PrefillStages(List.copyOf(started));
        }
        catch (RuntimeException e) {
            started.forEach(EngineProcess::close);
            throw e;
        }
    }

    /**
     * Runs a prompt's prefill on every stage and answers as one prefill JVM would: stage 0's first
     * token and logits digest, the longest stage's prefill time and the merged parameters. Every
     * stage must have computed the same first token and logits bits and named the same blocks; a
     * stage that fails has the earlier stages' requests aborted.
     *
     * @param id the request id.
     * @param prompt the prompt's tokens.
     * @param seconds each stage's deadline.
     * @return the reply, or one with {@code error} and {@code message}.
     */
    ObjectNode prefill(String id, ArrayNode prompt, int seconds)
    {
        ObjectNode first = stages.getFirst().request((ObjectNode) command("prefill", id).set("prompt", prompt), seconds);
        if (first.has("error") || stages.size() == 1) {
            return first;
        }
        TransferParams merged = TransferParamsJson.read(first.path("params").asText());
        long prefillNanos = first.path("prefillNanos").asLong();
        for (int stage = 1; stage < stages.size(); stage++) {
            ObjectNode reply = stages.get(stage).request((ObjectNode) command("prefill", id).put("slot", first.path("slot").asInt()).set("prompt", prompt),
                    seconds);
            String problem = reply.has("error") ? reply.path("message").asText() : differs(first, reply, merged);
            if (problem != null) {
                abortFirst(id, stage + (reply.has("error") ? 0 : 1));
                return Lines.object().put("error", reply.has("error") ? reply.path("error").asText() : "INTERNAL")
                        .put("message", "pipeline stage " + stage + ": " + problem);
            }
            merged = merged.withEpochsOf(TransferParamsJson.read(reply.path("params").asText()));
            prefillNanos = Math.max(prefillNanos, reply.path("prefillNanos").asLong());
        }
        return first.put("prefillNanos", prefillNanos).put("params", TransferParamsJson.write(merged));
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

    /** Aborts the request on the first {@code count} stages, which prefilled it. */
    private void abortFirst(String id, int count)
    {
        for (EngineProcess stage : stages.subList(0, count)) {
            stage.request(command("abort", id), 30);
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
