package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The wire's speed next to the transports that move bytes over TCP ({@code tcp}, and {@code ucx}
 * with {@code UCX_TLS=tcp}): {@code tcp_stream.c} (packaged with the command line) is compiled and
 * run as two forked processes moving the same total in the same block sizes over one TCP
 * connection on 127.0.0.1, with the kernel's default socket buffers and
 * {@code TCP_NODELAY} as both transports set it. A {@code tcp} row's ratio to it, and a {@code ucx}
 * row's with {@code UCX_TLS=tcp}, says how much of one TCP stream the transport uses; a {@code ucx}
 * row over shared memory only says how the two compare.
 *
 * <p>Per block size: one untimed pass, then {@value #TIMED_PASSES} timed, and the best is the figure,
 * as for the other baselines.
 *
 * <p>Between two hosts ({@code kvbridge bench --role target|initiator}) the same program runs as
 * two processes on them: {@link #serve} starts the receiver on the target, {@link #measureTo} runs
 * the sender on the initiator against it.
 */
public final class TcpStreamBaseline
{
    /** The transports this baseline is compared with; it is measured once, before the first of them. */
    public static final List<String> TRANSPORTS = List.of("tcp", "ucx");

    /** Timed passes per block size. */
    public static final int TIMED_PASSES = 5;

    private static final CompiledBaseline.Program PROGRAM = new CompiledBaseline.Program("tcp_stream.c", List.of(),
            Pattern.compile("tcp_stream send block=(\\d+) total=\\d+ passes=\\d+ mean [0-9.]+ GB/s best ([0-9.]+) GB/s"), "TCP stream baseline", "", 600);

    private static final Pattern LISTENING = Pattern.compile("tcp_stream listening port=(\\d+)");

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

    /**
     * Compiles and starts the receiving end on an address of this host, for one sender; never
     * throws for a missing compiler or a failing start, it says why instead.
     *
     * @param compiler the C compiler command.
     * @param host the address to listen on (the port is the kernel's choice).
     * @param totalBytes bytes the sender sends per block size; its header must say the same.
     * @return the receiver.
     */
    public static BaselineServer serve(String compiler, String host, long totalBytes)
    {
        return BaselineServer.start(PROGRAM, compiler, List.of("--serve=" + BaselineServer.hostPort(host, 0), Long.toString(totalBytes)), Map.of(), LISTENING,
                host);
    }

    /**
     * Compiles and runs the sending end against a receiver {@link #serve} started on another host;
     * never throws for a missing compiler or a failing run, it says why instead.
     *
     * @param compiler the C compiler command.
     * @param host the receiver's host.
     * @param port the receiver's port.
     * @param totalBytes bytes sent per block size.
     * @param blockSizes the block sizes.
     * @return the figures, or the reason there are none.
     */
    public static BaselineResult measureTo(String compiler, String host, int port, long totalBytes, List<Long> blockSizes)
    {
        requireNonNull(blockSizes, "blockSizes is null");
        List<String> arguments = new ArrayList<>(List.of("--connect=" + BaselineServer.hostPort(host, port), Long.toString(totalBytes)));
        blockSizes.forEach(size -> arguments.add(Long.toString(size)));
        arguments.add("--passes=" + TIMED_PASSES);
        return CompiledBaseline.measure(PROGRAM, compiler, arguments, blockSizes);
    }
}
