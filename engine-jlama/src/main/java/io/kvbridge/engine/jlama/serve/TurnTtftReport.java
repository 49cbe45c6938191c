package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;
import java.util.Locale;

/**
 * What the multi-turn time-to-first-token benchmark measured, with medians per history.
 *
 * @param options what ran.
 * @param jvmOptions the engine JVMs' options.
 * @param samples every timed pair.
 * @param bytesPerToken KV bytes one token moves (all layers, key and value).
 */
public record TurnTtftReport(TurnTtftOptions options, List<String> jvmOptions, List<Sample> samples, long bytesPerToken)
{
    /**
     * One timed pair of second turns.
     *
     * @param history the tokens the first turn left (handed back).
     * @param handBackNanos router: the second turn's prefill request until the decoder's first step, with the hand-back.
     * @param recomputeNanos router: the same, the prefill JVM computing the whole conversation.
     * @param receiveNanos the prefill JVM receiving the hand-back's lacking blocks.
     * @param handBackPrefillNanos the prefill JVM's receive and forward pass over the new tokens.
     * @param recomputePrefillNanos the prefill JVM's forward pass over the whole conversation.
     * @param handBackBlocks blocks received back.
     * @param computedTokens tokens the prefill JVM ran with the hand-back.
     * @param identical whether both ways gave the same tokens and logits bits (prefill's and the decoder's step).
     */
    public record Sample(int history, long handBackNanos, long recomputeNanos, long receiveNanos, long handBackPrefillNanos, long recomputePrefillNanos,
            int handBackBlocks, int computedTokens, boolean identical)
    {
    }

    /**
     * Medians over one history's samples.
     *
     * @param history the history.
     * @param handBackMs median time to first token with the hand-back.
     * @param recomputeMs median time to first token recomputing.
     * @param receiveMs median hand-back receive.
     * @param handBackPrefillMs median receive and new-token pass.
     * @param recomputePrefillMs median whole-conversation pass.
     * @param handBackBlocks blocks received back (the same in every sample).
     * @param computedTokens tokens computed with the hand-back.
     * @param identical whether every sample was bit-identical.
     */
    public record Row(int history, double handBackMs, double recomputeMs, double receiveMs, double handBackPrefillMs, double recomputePrefillMs,
            int handBackBlocks, int computedTokens, boolean identical)
    {
        /**
         * Returns handed-back over recomputed time to first token.
         *
         * @return the ratio.
         */
        public double ratio()
        {
            return handBackMs / recomputeMs;
        }
    }

    /**
     * Returns the medians per history, in the order asked.
     *
     * @return one row a history.
     */
    public List<Row> rows()
    {
        return options.histories().stream().map(history -> {
            List<Sample> of = samples.stream().filter(s -> s.history() == history).toList();
            return new Row(history, Medians.millis(of, Sample::handBackNanos), Medians.millis(of, Sample::recomputeNanos), Medians.millis(of, Sample::receiveNanos),
                    Medians.millis(of, Sample::handBackPrefillNanos), Medians.millis(of, Sample::recomputePrefillNanos),
                    of.isEmpty() ? 0 : of.getFirst().handBackBlocks(), of.isEmpty() ? 0 : of.getFirst().computedTokens(),
                    of.stream().allMatch(Sample::identical));
        }).toList();
    }

    /**
     * Tells whether every sample gave the same tokens and logits bits both ways.
     *
     * @return true when all matched.
     */
    public boolean allIdentical()
    {
        return samples.stream().allMatch(Sample::identical);
    }

    /**
     * Renders the medians for a terminal.
     *
     * @return the lines.
     */
    public String toText()
    {
        StringBuilder text = new StringBuilder();
        text.append(String.format(Locale.ROOT, "jlama second-turn time to first decoded token, %s (context %d) over %s, %s; %d timed pairs per history "
                + "(median), %d warm-up rounds, %d new tokens%n", options.model(), TurnTtftOptions.CONTEXT, options.backend(), options.mode(),
                options.repetitions(), options.warmups(), TurnTtftOptions.NEW_TOKENS));
        text.append(String.format(Locale.ROOT, "  engine JVMs: %s (bit-identity flag %s)%n", String.join(" ", jvmOptions),
                options.bitIdentical() ? "on" : "off"));
        text.append(String.format(Locale.ROOT, "  %7s %10s %10s %6s %13s %9s %10s %9s %13s  %s%n", "history", "hand-back", "recompute", "ratio",
                "hand-back pf", "receive", "bytes back", "computed", "recompute pf", "bit-identical"));
        for (Row r : rows()) {
            text.append(String.format(Locale.ROOT, "  %7d %8.1fms %8.1fms %6.3f %11.1fms %7.2fms %10d %9d %11.1fms  %s%n", r.history(), r.handBackMs(),
                    r.recomputeMs(), r.ratio(), r.handBackPrefillMs(), r.receiveMs(), (long) r.handBackBlocks() * options.blockTokens() * bytesPerToken,
                    r.computedTokens(), r.recomputePrefillMs(), r.identical() ? "yes" : "NO"));
        }
        text.append("  hand-back / recompute = router time from the second turn's prefill request to the decoder's first step; hand-back pf = the\n"
                + "  prefill JVM receiving the lacking blocks and computing the new tokens; recompute pf = it computing the whole conversation\n");
        return text.toString();
    }

    /**
     * Renders every sample and the medians as JSON.
     *
     * @return the JSON object.
     */
    public ObjectNode toJson()
    {
        ObjectNode root = Lines.object().put("engine", "jlama").put("benchmark", "turn-ttft").put("model", options.model())
                .put("context", TurnTtftOptions.CONTEXT).put("backend", options.backend()).put("mode", options.mode())
                .put("repetitions", options.repetitions()).put("warmups", options.warmups()).put("newTokens", TurnTtftOptions.NEW_TOKENS)
                .put("bitIdentityFlag", options.bitIdentical()).put("allIdentical", allIdentical());
        root.set("jvmOptions", Lines.JSON.valueToTree(jvmOptions));
        ArrayNode rows = root.putArray("medians");
        for (Row r : rows()) {
            rows.addObject().put("history", r.history()).put("handBackMs", r.handBackMs()).put("recomputeMs", r.recomputeMs()).put("ratio", r.ratio())
                    .put("handBackPrefillMs", r.handBackPrefillMs()).put("receiveMs", r.receiveMs()).put("recomputePrefillMs", r.recomputePrefillMs())
                    .put("bytesBack", (long) r.handBackBlocks() * options.blockTokens() * bytesPerToken).put("computedTokens", r.computedTokens())
                    .put("identical", r.identical());
        }
        root.set("samples", Lines.JSON.valueToTree(samples));
        return root;
    }
}
