package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The single-thread memcpy baseline: {@code memcpy_stream.c} (packaged with the command line) is
 * compiled into a temporary directory and run over the same total and block sizes as the transports.
 */
public final class MemcpyBaseline
{
    private static final CompiledBaseline.Program PROGRAM = new CompiledBaseline.Program("memcpy_stream.c", List.of(),
            Pattern.compile("memcpy chunk=(\\d+) best-of-5 [0-9.]+ ms per GiB = ([0-9.]+) GB/s"), "memcpy baseline", "", 300);

    private MemcpyBaseline()
    {
    }

    /**
     * Compiles and runs the baseline; never throws for a missing or failing compiler, it says why instead.
     *
     * @param compiler the C compiler command, normally {@code gcc}.
     * @param totalBytes bytes streamed per block size.
     * @param blockSizes the block sizes.
     * @return the figures, or the reason there are none.
     */
    public static BaselineResult measure(String compiler, long totalBytes, List<Long> blockSizes)
    {
        requireNonNull(blockSizes, "blockSizes is null");
        List<String> arguments = new ArrayList<>(List.of("--total=" + totalBytes));
        blockSizes.forEach(size -> arguments.add(Long.toString(size)));
        return CompiledBaseline.measure(PROGRAM, compiler, arguments, blockSizes);
    }
}
