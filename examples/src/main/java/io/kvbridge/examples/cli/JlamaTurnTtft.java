package io.kvbridge.examples.cli;

import io.kvbridge.engine.jlama.serve.TurnTtftBenchmark;
import io.kvbridge.engine.jlama.serve.TurnTtftOptions;
import io.kvbridge.engine.jlama.serve.TurnTtftReport;
import java.util.List;
import java.util.stream.Stream;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code demo --engine jlama --turn-ttft 1024,4096}: a conversation's second-turn time to first
 * token with the first turn's KV handed back, against the prefill recomputing the conversation.
 */
final class JlamaTurnTtft
{
    private JlamaTurnTtft()
    {
    }

    /**
     * Checks the options, runs the benchmark and prints its report.
     *
     * @return 0 when every pair was bit-identical (or the flag is off), 1 otherwise.
     */
    static int run(CommandSpec spec, String histories, String transport, String mode, String model, int repetitions, boolean bitIdentical, long seed,
            boolean json)
    {
        InputChecks.check(spec, histories.matches("\\d{1,4}(,\\d{1,4})*"),
                "--turn-ttft=%s (expected: history lengths separated by commas, for example 1024,4096)", histories);
        List<Integer> lengths = Stream.of(histories.split(",")).map(Integer::parseInt).toList();
        int most = TurnTtftOptions.CONTEXT - TurnTtftOptions.NEW_TOKENS - 2;
        InputChecks.check(spec, lengths.stream().allMatch(n -> n >= 2 && n <= most),
                "--turn-ttft=%s: each history must be in [2, %d] (the benchmark model's %d-token context less the new turn)", histories, most,
                TurnTtftOptions.CONTEXT);
        InputChecks.check(spec, mode.equals("push") || mode.equals("pull"), "--turn-ttft times one mode at a time; --mode=%s (expected: push or pull)",
                mode);
        InputChecks.check(spec, repetitions >= 1 && repetitions <= 100, "--ttft-runs=%d is outside [1, 100]", repetitions);
        TurnTtftOptions options = new TurnTtftOptions(transport, mode, model, lengths, repetitions, 1, bitIdentical, seed, 16);
        return JlamaDemo.runBenchmark(spec, options.bitIdentical(), directory -> {
            TurnTtftReport report = TurnTtftBenchmark.run(options, directory, System.getProperty("java.class.path"));
            return new JlamaDemo.Printed(json ? report.toJson().toString() : report.toText(), report.allIdentical());
        });
    }
}
