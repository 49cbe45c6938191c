package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;
import java.util.Locale;

/**
 * What the time-to-first-token benchmark measured, with medians per prompt length.
 *
 * @param options what ran.
 * @param jvmOptions the engine JVMs' options.
 * @param samples every timed pair.
 * @param bytesPerToken KV bytes one prompt token moves (all layers, key and value).
 */
public record TtftReport(TtftOptions options, List<String> jvmOptions, List<Sample> samples, long bytesPerToken)
{
    /**
     * One timed pair.
     *
     * @param promptTokens the prompt's length.
     * @param disaggregatedNanos router: prefill request until the decoder's first token, through kvbridge.
     * @param recomputeNanos router: the decoder's own prompt pass and first step.
     * @param prefillNanos the prefill JVM's prompt pass.
     * @param transferNanos the decoder: {@code blocksAllocated} until the blocks arrived.
     * @param firstStepNanos the decoder's first step after the transfer.
     * @param recomputePrefillNanos the decoder's own prompt pass: the prefill time disaggregation saves it.
     * @param recomputeFirstStepNanos the decoder's first step after its own prompt pass.
     * @param identical whether the first token and both steps' logits bits matched between the two ways.
     */
    public record Sample(int promptTokens, long disaggregatedNanos, long recomputeNanos, long prefillNanos, long transferNanos, long firstStepNanos,
            long recomputePrefillNanos, long recomputeFirstStepNanos, boolean identical)
    {
    }

    /**
     * Medians over one prompt length's samples.
     *
     * @param promptTokens the length.
     * @param disaggregatedMs median disaggregated time to first token.
     * @param recomputeMs median recomputed time to first token.
     * @param prefillMs median prefill JVM prompt pass.
     * @param transferMs median transfer.
     * @param savedMs median decoder prompt pass (what the transfer replaces).
     * @param firstStepMs median decoder first step after the transfer.
     * @param identical whether every sample was bit-identical.
     */
    public record Row(int promptTokens, double disaggregatedMs, double recomputeMs, double prefillMs, double transferMs, double savedMs,
            double firstStepMs, boolean identical)
    {
        /**
         * Returns disaggregated over recomputed time to first token.
         *
         * @return the ratio.
         */
        public double ratio()
        {
            return disaggregatedMs / recomputeMs;
        }

        /**
         * Returns the transfer as a fraction of the prefill time it saves the decoder.
         *
         * @return the fraction.
         */
        public double transferOfSaved()
        {
            return transferMs / savedMs;
        }
    }

    /**
     * Returns the medians per prompt length, in the order asked.
     *
     * @return one row a length.
     */
    public List<Row> rows()
    {
        return options.promptLengths().stream().map(length -> {
            List<Sample> of = samples.stream().filter(s -> s.promptTokens() == length).toList();
            return new Row(length, Medians.millis(of, Sample::disaggregatedNanos), Medians.millis(of, Sample::recomputeNanos), Medians.millis(of, Sample::prefillNanos),
                    Medians.millis(of, Sample::transferNanos), Medians.millis(of, Sample::recomputePrefillNanos), Medians.millis(of, Sample::firstStepNanos),
                    of.stream().allMatch(Sample::identical));
        }).toList();
    }

    /**
     * Tells whether every sample gave the same first token and logits bits both ways.
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
        text.append(String.format(Locale.ROOT, "jlama time to first decoded token, %s over %s, %s; %d timed pairs per length (median), %d warm-up rounds%n",
                options.model(), options.backend(), options.mode(), options.repetitions(), options.warmups()));
        text.append(String.format(Locale.ROOT, "  engine JVMs: %s (bit-identity flag %s)%n", String.join(" ", jvmOptions),
                options.bitIdentical() ? "on" : "off"));
        text.append(String.format(Locale.ROOT, "  %6s %13s %10s %6s %9s %10s %9s %15s %10s %10s  %s%n", "prompt", "disaggregated", "recompute", "ratio",
                "prefill", "transfer", "KV bytes", "saved prefill", "xfer/saved", "first step", "bit-identical"));
        for (Row r : rows()) {
            text.append(String.format(Locale.ROOT, "  %6d %11.1fms %8.1fms %6.3f %7.1fms %8.2fms %9d %13.1fms %9.2f%% %8.2fms  %s%n", r.promptTokens(),
                    r.disaggregatedMs(), r.recomputeMs(), r.ratio(), r.prefillMs(), r.transferMs(), kvBytes(r.promptTokens()), r.savedMs(),
                    100 * r.transferOfSaved(), r.firstStepMs(), r.identical() ? "yes" : "NO"));
        }
        text.append("  disaggregated = prefill JVM prompt pass + kvbridge transfer + decoder's first step (router wall time);\n"
                + "  recompute = the decode JVM's own prompt pass + first step; saved prefill = that prompt pass, which the transfer replaces\n");
        return text.toString();
    }

    /**
     * Renders every sample and the medians as JSON.
     *
     * @return the JSON object.
     */
    public ObjectNode toJson()
    {
        ObjectNode root = Lines.object().put("engine", "jlama").put("benchmark", "ttft").put("model", options.model()).put("backend", options.backend())
                .put("mode", options.mode()).put("repetitions", options.repetitions()).put("warmups", options.warmups())
                .put("bitIdentityFlag", options.bitIdentical()).put("allIdentical", allIdentical());
        root.set("jvmOptions", Lines.JSON.valueToTree(jvmOptions));
        ArrayNode rows = root.putArray("medians");
        for (Row r : rows()) {
            rows.addObject().put("promptTokens", r.promptTokens()).put("disaggregatedMs", r.disaggregatedMs()).put("recomputeMs", r.recomputeMs())
                    .put("ratio", r.ratio()).put("prefillMs", r.prefillMs()).put("transferMs", r.transferMs()).put("kvBytes", kvBytes(r.promptTokens()))
                    .put("savedPrefillMs", r.savedMs()).put("transferOfSaved", r.transferOfSaved()).put("firstStepMs", r.firstStepMs())
                    .put("identical", r.identical());
        }
        root.set("samples", Lines.JSON.valueToTree(samples));
        return root;
    }

    private long kvBytes(int promptTokens)
    {
        long blocks = (promptTokens + options.blockTokens() - 1) / options.blockTokens();
        return blocks * options.blockTokens() * bytesPerToken;
    }
}
