package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The audit of a disaggregated run.
 *
 * @param options what ran.
 * @param sessions each session next to its reference.
 * @param prefillAudit the prefill JVM's last audit; with several pipeline stages, their audits merged ({@code stages} holds each).
 * @param decodeAudit the decode JVM's last audit.
 * @param decoderForwardedTokens every token the decode JVM ran through Jlama's forward pass.
 */
public record RunReport(RunOptions options, List<SessionResult> sessions, ObjectNode prefillAudit, ObjectNode decodeAudit, long decoderForwardedTokens)
{
    /**
     * Tells whether every session matched its reference bit for bit, the decoder never ran a prompt
     * and both engines ended idle.
     *
     * @return true when the run passed.
     */
    public boolean passed()
    {
        return sessions.stream().allMatch(s -> s.identical(options.decodeTokens())) && decoderRanOnlyDecodeSteps()
                && prefillAudit.path("idle").asBoolean() && decodeAudit.path("idle").asBoolean()
                && prefillAudit.path("freed").asInt() == sessions.size() && stagesRegisteredOnlyTheirLayers() && prefillRanOnlyNewTokens();
    }

    /**
     * Tells whether the prefill JVM ran through Jlama's forward pass exactly the tokens after each
     * turn's hand-back (every prompt token of a turn without one); true with several stages, whose
     * audits are merged.
     *
     * @return true when its forwarded tokens equal the sum over turns of prompt minus handed-back tokens.
     */
    public boolean prefillRanOnlyNewTokens()
    {
        return !prefillAudit.has("forwardedTokens") || prefillAudit.path("forwardedTokens").asLong() == prefillNewTokens();
    }

    /** {@return the prompt tokens the prefill had to compute: each turn's prompt after its handed-back tokens} */
    private long prefillNewTokens()
    {
        return sessions.stream().filter(s -> s.error() == null).mapToLong(s -> s.promptTokens() - s.handedBackTokens()).sum();
    }

    /**
     * Tells whether each producer pipeline stage registered exactly its own layers (as Jlama's
     * accessors place them) and the decoder every layer; true for an unsplit producer.
     *
     * @return true when every stage's registered layers are its equal share of the decoder's.
     */
    public boolean stagesRegisteredOnlyTheirLayers()
    {
        JsonNode stages = prefillAudit.path("stages");
        if (!stages.isArray()) {
            return true;
        }
        List<Integer> all = new ArrayList<>();
        decodeAudit.path("registeredLayers").forEach(layer -> all.add(layer.asInt()));
        int share = all.size() / stages.size();
        for (JsonNode stage : stages) {
            List<Integer> registered = new ArrayList<>();
            stage.path("registeredLayers").forEach(layer -> registered.add(layer.asInt()));
            int first = stage.path("ppRank").asInt() * share;
            if (all.size() % stages.size() != 0 || !registered.equals(all.subList(first, first + share))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Tells whether the decoder ran exactly the decode steps through the model, never a prompt.
     *
     * @return true when its forwarded tokens equal sessions x decode steps.
     */
    public boolean decoderRanOnlyDecodeSteps()
    {
        return decoderForwardedTokens == (long) sessions.size() * options.decodeTokens();
    }

    /**
     * Renders the audit as JSON.
     *
     * @return the JSON object.
     */
    public ObjectNode toJson()
    {
        ObjectNode root = Lines.object().put("engine", "jlama").put("model", options.modelLabel()).put("backend", options.backend())
                .put("mode", options.mode()).put("passed", passed()).put("decoderForwardedTokens", decoderForwardedTokens)
                .put("decoderRanOnlyDecodeSteps", decoderRanOnlyDecodeSteps()).put("producerPp", options.producerPp())
                .put("stagesRegisteredOnlyTheirLayers", stagesRegisteredOnlyTheirLayers()).put("streamLayers", options.streamLayers())
                .put("handBack", options.handBack()).put("prefillRanOnlyNewTokens", prefillRanOnlyNewTokens());
        ArrayNode list = root.putArray("sessions");
        for (SessionResult s : sessions) {
            ObjectNode node = list.addObject().put("id", s.id()).put("mode", s.mode()).put("promptTokens", s.promptTokens())
                    .put("generatedTokens", s.tokens().size()).put("identical", s.identical(options.decodeTokens()))
                    .put("prefillMs", millis(s.prefillNanos())).put("transferMs", millis(s.transferNanos()))
                    .put("firstDecodeStepMs", millis(s.firstStepNanos())).put("bytesMoved", s.bytesMoved())
                    .put("cachedTokens", s.cachedTokens()).put("decodeReadyMs", millis(s.decodeReadyNanos()))
                    .put("handedBackTokens", s.handedBackTokens()).put("handBackBytes", s.handBackBytes());
            node.set("mismatchedSteps", Lines.JSON.valueToTree(s.mismatchedSteps()));
            if (s.error() != null) {
                node.put("error", s.error());
            }
        }
        root.set("prefillAudit", prefillAudit);
        root.set("decodeAudit", decodeAudit);
        return root;
    }

    /**
     * Renders the audit for a terminal.
     *
     * @return the lines.
     */
    public String toText()
    {
        StringBuilder text = new StringBuilder();
        text.append(String.format(Locale.ROOT, "jlama %s over %s, mode %s: %d sessions%s, %d in flight, %d decode steps each%s%n", options.modelLabel(),
                options.backend(), options.mode(), options.sessions(), options.turns() > 1 ? " of " + options.turns() + " turns" : "",
                options.concurrency(), options.decodeTokens(), options.producerPp() > 1 ? ", " + options.producerPp() + " prefill stages (PP"
                        + options.producerPp() + " to PP1)" : ""));
        text.append(String.format(Locale.ROOT, "  %-18s %-5s %7s %7s %9s %10s %12s %11s  %s%n", "session", "mode", "prompt", "cached", "prefill",
                "transfer", "first step", "bytes", "bit-identical"));
        long bytes = 0;
        for (SessionResult s : sessions) {
            bytes += s.bytesMoved();
            text.append(String.format(Locale.ROOT, "  %-18s %-5s %7d %7d %7.1fms %8.1fms %10.1fms %11d  %s%n", s.id(), s.mode(), s.promptTokens(),
                    s.cachedTokens(),
                    millis(s.prefillNanos()), millis(s.transferNanos()), millis(s.firstStepNanos()), s.bytesMoved(),
                    s.error() != null ? "REFUSED: " + s.error() : s.identical(options.decodeTokens()) ? "yes" : "NO, steps " + s.mismatchedSteps()));
        }
        long[] ready = sessions.stream().filter(s -> s.error() == null).mapToLong(SessionResult::decodeReadyNanos).sorted().toArray();
        if (ready.length > 0) {
            // prefill start (the router sends the prompt) to the decoder holding every block: what streaming the layers shortens
            text.append(String.format(Locale.ROOT, "  decode-ready after prefill start (%s): p50 %.1fms, max %.1fms%n",
                    options.streamLayers() ? "layers streamed" : "handed over whole", millis(ready[(ready.length - 1) / 2]), millis(ready[ready.length - 1])));
        }
        if (options.turns() > 1) {
            long back = sessions.stream().mapToLong(SessionResult::handBackBytes).sum();
            text.append(options.handBack() ? String.format(Locale.ROOT, "  hand-back: %d bytes moved back (the blocks the prefill JVM lacked); prefill "
                    + "forwarded %d tokens (%s)%n", back, prefillAudit.path("forwardedTokens").asLong(), prefillRanOnlyNewTokens()
                    ? "each turn's new tokens only" : "NOT each turn's new tokens only, expected " + prefillNewTokens())
                    : "  hand-back: off (each turn's prefill computes the whole conversation)\n");
        }
        if (options.streamLayers()) {
            // a layer in place while another is still missing: the session arrived layer by layer, not whole at the end
            text.append(String.format(Locale.ROOT, "  sessions the decoder saw partly loaded (some layers in place, others not yet): %d%n",
                    decodeAudit.path("partlyLoadedSessions").asLong()));
        }
        text.append(String.format(Locale.ROOT, "  bytes moved: %d; decoder forwarded %d tokens (%s)%n", bytes, decoderForwardedTokens,
                decoderRanOnlyDecodeSteps() ? "decode steps only, no prompt" : "MORE than its decode steps"));
        text.append(String.format(Locale.ROOT, "  idle audits: prefill %s (%d slots freed), decode %s%n", prefillAudit.path("idle").asBoolean() ? "idle" : "BUSY "
                + prefillAudit.path("connector").asText(), prefillAudit.path("freed").asInt(), decodeAudit.path("idle").asBoolean() ? "idle" : "BUSY "
                + decodeAudit.path("connector").asText()));
        JsonNode stages = prefillAudit.path("stages");
        if (stages.isArray()) {
            StringBuilder line = new StringBuilder("  registered layers (as Jlama places them):");
            for (JsonNode stage : stages) {
                line.append(String.format(Locale.ROOT, " prefill stage %d %s;", stage.path("ppRank").asInt(), stage.path("registeredLayers")));
            }
            text.append(line).append(String.format(Locale.ROOT, " decoder %s (%s)%n", decodeAudit.path("registeredLayers"),
                    stagesRegisteredOnlyTheirLayers() ? "each stage its own layers only" : "NOT each stage's own layers"));
        }
        text.append(passed() ? "  PASSED: every token and every step's logits are bit-identical to the single-JVM reference\n"
                : "  FAILED: the disaggregated run differs from the single-JVM reference\n");
        return text.toString();
    }

    private static double millis(long nanos)
    {
        return nanos / 1e6;
    }
}
