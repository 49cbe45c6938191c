package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The wire's speed next to the {@code ucx} transport: {@code tcp_stream.c} (packaged with the
 * command line) is compiled and run as two forked processes moving the same total in the same block
 * sizes over one TCP connection on 127.0.0.1, with the kernel's default socket buffers and
 * {@code TCP_NODELAY} as UCX's tcp transport sets it. With {@code UCX_TLS=tcp} the transport's ratio
 * to it says how much of one TCP stream the transport uses; over shared memory it only says how the
 * two compare.
 *
 * <p>Per block size: one untimed pass, then {@value #TIMED_PASSES} timed, and the best is the figure,
 * as for the other baselines.
 */
public final class TcpStreamBaseline
{
    /** The transport this baseline is compared with. */
    public static final String TRANSPORT = "ucx";

    /** Timed passes per block size. */
    public static final int TIMED_PASSES = 5;

    private static final CompiledBaseline.Program PROGRAM = new CompiledBaseline.Program("tcp_stream.c", List.of(),
            Pattern.compile("tcp_stream send block=(\\d+) total=\\d+ passes=\\d+ mean [0-9.]+ GB/s best ([0-9.]+) GB/s"), "TCP stream baseline", "", 600);

    private TcpStreamBaseline()
    {
    }

    /**
     * Compiles and runs the program; never throws for a missing compiler or a failing run, it says
     * why instead.
     *
     * @param compiler the C compiler command, normally {@code gcc}.
     * @param totalBytes bytes sent per block size.
     * @param blockSizes the block sizes.
     * @return the figures, or the reason there are none.
     */
    public static BaselineResult measure(String compiler, long totalBytes, List<Long> blockSizes)
    {
        requireNonNull(blockSizes, "blockSizes is null");
        List<String> arguments = new ArrayList<>(List.of(Long.toString(totalBytes)));
        blockSizes.forEach(size -> arguments.add(Long.toString(size)));
        arguments.add("--passes=" + TIMED_PASSES);
        return CompiledBaseline.measure(PROGRAM, compiler, arguments, blockSizes);
    }
}
