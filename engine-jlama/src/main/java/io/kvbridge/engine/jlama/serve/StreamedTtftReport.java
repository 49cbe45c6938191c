package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;
import java.util.Locale;

/**
 * What the streamed-against-whole benchmark measured, with medians per prompt length and the goal:
 * a streamed hand-off is decode-ready within 10 % of the longer of the prefill and the whole
 * transfer, plus one layer's transfer, and never later than the whole hand-off.
 *
 * @param options what ran.
 * @param jvmOptions the engine JVMs' options.
 * @param pairs every timed pair.
 * @param layers the model's layers.
 * @param tokensPerPage tokens in one of Jlama's context pages of a session.
 * @param contextPages Jlama's context pages per session.
 */
public record StreamedTtftReport(StreamedTtftOptions options, List<String> jvmOptions, List<Pair> pairs, int layers, int tokensPerPage,
        int contextPages)
{
    /** The slack the goal allows over its bound. */
    public static final double GOAL_SLACK = 1.10;

    /**
     * One hand-off.
     *
     * @param decodeReadyNanos from the router sending the prompt until the decoder had every block
     *     (wall clock, read in both JVMs, microsecond grain).
     * @param firstTokenNanos from the router sending the prompt until the decoder's reply with its first decoded token.
     * @param prefillNanos the prefill JVM's time for the request (streamed: announcement and pass).
     * @param transferNanos the decoder's {@code blocksAllocated} until its blocks landed.
     * @param token the prefill's first token.
     * @param digest its logits' digest.
     * @param stepToken the decoder's first decoded token.
     * @param stepDigest its logits' digest.
     */
    public record Sample(long decodeReadyNanos, long firstTokenNanos, long prefillNanos, long transferNanos, int token, String digest, int stepToken,
            String stepDigest)
    {
        boolean sameBitsAs(Sample other)
        {
            return token == other.token && digest.equals(other.digest) && stepToken == other.stepToken && stepDigest.equals(other.stepDigest);
        }
    }

    /**
     * One prompt handed over both ways.
     *
     * @param promptTokens the prompt's length.
     * @param streamed the streamed hand-off.
     * @param whole the whole hand-off.
     * @param identical whether both gave the same first token, decoded token and logits bits.
     */
    public record Pair(int promptTokens, Sample streamed, Sample whole, boolean identical)
    {
    }

    /**
     * Medians over one prompt length's pairs, in milliseconds.
     *
     * @param promptTokens the length.
     * @param streamedReadyMs streamed: decode-ready.
     * @param wholeReadyMs whole: decode-ready.
     * @param streamedFirstTokenMs streamed: the decoder's first token.
     * @param wholeFirstTokenMs whole: the decoder's first token.
     * @param prefillMs whole: the prefill JVM's pass.
     * @param streamedPrefillMs streamed: the prefill JVM's pass, announcements included.
     * @param transferMs whole: the transfer after the pass.
     * @param identical whether every pair was bit-identical.
     * @param layers the model's layers, for one layer's share of the transfer.
     */
    public record Row(int promptTokens, double streamedReadyMs, double wholeReadyMs, double streamedFirstTokenMs, double wholeFirstTokenMs,
            double prefillMs, double streamedPrefillMs, double transferMs, boolean identical, int layers)
    {
        /**
         * Returns the goal's bound: the longer of the prefill and the transfer, plus one layer's transfer.
         *
         * @return milliseconds.
         */
        public double boundMs()
        {
            return Math.max(prefillMs, transferMs) + transferMs / layers;
        }

        /**
         * Tells whether streamed decode-ready met the goal: within {@link #GOAL_SLACK} of the bound and no later than whole.
         *
         * @return true when met.
         */
        public boolean goalMet()
        {
            return streamedReadyMs <= GOAL_SLACK * boundMs() && streamedReadyMs <= wholeReadyMs;
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
            List<Pair> of = pairs.stream().filter(p -> p.promptTokens() == length).toList();
            return new Row(length, Medians.millis(of, p -> p.streamed().decodeReadyNanos()), Medians.millis(of, p -> p.whole().decodeReadyNanos()),
                    Medians.millis(of, p -> p.streamed().firstTokenNanos()), Medians.millis(of, p -> p.whole().firstTokenNanos()),
                    Medians.millis(of, p -> p.whole().prefillNanos()), Medians.millis(of, p -> p.streamed().prefillNanos()), Medians.millis(of, p -> p.whole().transferNanos()),
                    of.stream().allMatch(Pair::identical), layers);
        }).toList();
    }

    /**
     * Tells whether every pair gave the same tokens and logits bits both ways.
     *
     * @return true when all matched.
     */
    public boolean allIdentical()
    {
        return pairs.stream().allMatch(Pair::identical);
    }

    /**
     * Renders the medians for a terminal.
     *
     * @return the lines.
     */
    public String toText()
    {
        StringBuilder text = new StringBuilder();
        text.append(String.format(Locale.ROOT, "jlama streamed against whole hand-off, %s over %s, %s; %d timed pairs per length (median), %d warm-up rounds%n",
                options.model(), options.backend(), options.mode(), options.repetitions(), options.warmups()));
        text.append(String.format(Locale.ROOT, "  prompt chunk %d tokens (jlama.max_batch_size, both JVMs); context %d = %d pages of %d tokens; %d layers%n",
                options.effectiveChunk(), options.contextLength(), contextPages, tokensPerPage, layers));
        text.append(String.format(Locale.ROOT, "  engine JVMs: %s%n", String.join(" ", jvmOptions)));
        text.append(String.format(Locale.ROOT, "  %6s %12s %12s %10s %10s %10s %10s %10s %9s %6s  %s%n", "prompt", "ready strm", "ready whole", "1st strm",
                "1st whole", "prefill", "pf strm", "transfer", "bound", "goal", "bit-identical"));
        for (Row r : rows()) {
            text.append(String.format(Locale.ROOT, "  %6d %10.1fms %10.1fms %8.1fms %8.1fms %8.1fms %8.1fms %8.2fms %7.1fms %6s  %s%n", r.promptTokens(),
                    r.streamedReadyMs(), r.wholeReadyMs(), r.streamedFirstTokenMs(), r.wholeFirstTokenMs(), r.prefillMs(), r.streamedPrefillMs(),
                    r.transferMs(), r.boundMs(), r.goalMet() ? "met" : "NOT", r.identical() ? "yes" : "NO"));
        }
        text.append("  ready = router sends the prompt until the decoder holds every block; 1st = until the decoder's first decoded token;\n"
                + "  prefill/transfer = the whole hand-off's pass and its transfer after it; bound = max(prefill, transfer) + transfer / layers;\n"
                + "  goal: streamed ready <= 1.10 x bound and <= whole ready\n");
        return text.toString();
    }

    /**
     * Renders every pair and the medians as JSON.
     *
     * @return the JSON object.
     */
    public ObjectNode toJson()
    {
        ObjectNode root = Lines.object().put("engine", "jlama").put("benchmark", "streamed-handoff").put("model", options.model())
                .put("backend", options.backend()).put("mode", options.mode()).put("repetitions", options.repetitions())
                .put("warmups", options.warmups()).put("chunkTokens", options.effectiveChunk()).put("contextLength", options.contextLength())
                .put("tokensPerPage", tokensPerPage).put("contextPages", contextPages).put("layers", layers).put("allIdentical", allIdentical());
        root.set("jvmOptions", Lines.JSON.valueToTree(jvmOptions));
        ArrayNode rows = root.putArray("medians");
        for (Row r : rows()) {
            rows.addObject().put("promptTokens", r.promptTokens()).put("streamedReadyMs", r.streamedReadyMs()).put("wholeReadyMs", r.wholeReadyMs())
                    .put("streamedFirstTokenMs", r.streamedFirstTokenMs()).put("wholeFirstTokenMs", r.wholeFirstTokenMs())
                    .put("prefillMs", r.prefillMs()).put("streamedPrefillMs", r.streamedPrefillMs()).put("transferMs", r.transferMs())
                    .put("boundMs", r.boundMs()).put("goalMet", r.goalMet()).put("identical", r.identical());
        }
        root.set("pairs", Lines.JSON.valueToTree(pairs));
        return root;
    }
}
