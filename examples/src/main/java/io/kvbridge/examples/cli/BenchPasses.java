package io.kvbridge.examples.cli;

import io.kvbridge.examples.bench.TransportBench;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The one-process bench's nixlbench options: the operation, and the untimed and timed passes of
 * every row. Two processes ({@code --role}) measure READ and WRITE with fixed passes, so these are
 * refused there.
 */
final class BenchPasses
{
    /** A pass streams the whole total: more than this many is an hour's run at small block sizes, not a measurement. */
    static final int MAX_ITERATIONS = 1_000;
    private static final List<String> OPTIONS = List.of("--op", "--iterations", "--warmup");

    @Spec(Spec.Target.MIXEE)
    private CommandSpec spec;

    @Option(names = "--op", paramLabel = "OP", defaultValue = "WRITE",
            description = "What the initiator does to the target's buffer: WRITE it, or READ it into its own (default: ${DEFAULT-VALUE}).")
    private String op;

    @Option(names = "--iterations", paramLabel = "N", defaultValue = "" + TransportBench.TIMED_PASSES,
            description = "Timed passes per row, each streaming the whole total; the fastest is reported (1 to 1000, default: ${DEFAULT-VALUE}).")
    private int iterations;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "1",
            description = "Untimed passes per row before the timed ones (0 to 1000, default: ${DEFAULT-VALUE}).")
    private int warmup;

    /** {@return the operation, checked: READ or WRITE in any case} */
    TransferOp op()
    {
        String upper = op.toUpperCase(java.util.Locale.ROOT);
        InputChecks.check(spec, upper.equals("READ") || upper.equals("WRITE"), "--op=%s is not READ or WRITE", op);
        return TransferOp.valueOf(upper);
    }

    /**
     * Checks the counts and the operation.
     *
     * @param roleActive whether the bench runs between two processes, which measures both operations with fixed passes.
     */
    void validate(boolean roleActive)
    {
        if (roleActive) {
            List<String> given = OPTIONS.stream().filter(name -> spec.commandLine().getParseResult().hasMatchedOption(name)).toList();
            InputChecks.check(spec, given.isEmpty(), "%s apply to the one-process bench; with --role the initiator measures READ and WRITE, "
                    + "one untimed pass and %d timed", String.join(", ", given), TransportBench.TIMED_PASSES);
            return;
        }
        op();
        InputChecks.check(spec, iterations >= 1 && iterations <= MAX_ITERATIONS, "--iterations=%d is outside [1, %d]", iterations, MAX_ITERATIONS);
        InputChecks.check(spec, warmup >= 0 && warmup <= MAX_ITERATIONS, "--warmup=%d is outside [0, %d]", warmup, MAX_ITERATIONS);
    }

    /**
     * {@return the passes of one row}
     *
     * @param batch descriptors per post.
     */
    TransportBench.Passes passes(int batch)
    {
        return new TransportBench.Passes(op(), batch, iterations, warmup);
    }

    /** {@return the timed passes per row} */
    int iterations()
    {
        return iterations;
    }

    /** {@return the untimed passes per row} */
    int warmup()
    {
        return warmup;
    }
}
