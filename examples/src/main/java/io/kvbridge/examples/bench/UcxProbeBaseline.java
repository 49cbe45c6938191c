package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The UCX baseline next to the {@code ucx} transport: {@code ucx_probe.c} (packaged with the command
 * line) is compiled against UCX ({@code -lucp -lucs}, headers from libucx-dev) and run as two forked
 * processes that put the same total in the same block sizes as {@link TransportBench}, from and into
 * memory of the same kind: allocated by UCX ({@code UCP_MEM_MAP_ALLOCATE}) when the bench lets the
 * transport allocate, else allocated by the probe and registered. The probe inherits this process's environment, so {@code UCX_TLS} and the other
 * {@code UCX_*} settings are those the transport instances start with.
 *
 * <p>Per block size: one untimed pass, then {@value #TIMED_PASSES} timed, and the best is the figure,
 * as for the memcpy baseline. A single pass is not enough: the probe's target must run for puts to
 * complete whenever UCX emulates them, so one stretch without a core for it (two cores shared with
 * anything else) cuts a pass to a fraction of what UCX can do.
 */
public final class UcxProbeBaseline
{
    /** The transport this baseline is compared with. */
    public static final String TRANSPORT = "ucx";

    /** Timed passes per block size. */
    public static final int TIMED_PASSES = 5;

    private static final CompiledBaseline.Program PROGRAM = new CompiledBaseline.Program("ucx_probe.c", List.of("-lucp", "-lucs"),
            Pattern.compile("ucx_probe put block=(\\d+) total=\\d+ memory=(?:own|ucx) batches=\\d+ mean [0-9.]+ GB/s best ([0-9.]+) GB/s"), "UCX probe baseline",
            "libucx-dev", 600);

    private UcxProbeBaseline()
    {
    }

    /**
     * Compiles and runs the probe; never throws for a missing compiler, missing UCX headers or a
     * failing probe, it says why instead.
     *
     * @param compiler the C compiler command, normally {@code gcc}.
     * @param totalBytes bytes put per block size.
     * @param blockSizes the block sizes.
     * @param ucxMemory whether UCX allocates the regions, as the transport's {@code allocate()} does.
     * @return the figures, or the reason there are none.
     */
    public static BaselineResult measure(String compiler, long totalBytes, List<Long> blockSizes, boolean ucxMemory)
    {
        requireNonNull(blockSizes, "blockSizes is null");
        List<String> arguments = new ArrayList<>(List.of("put", Long.toString(totalBytes)));
        blockSizes.forEach(size -> arguments.add(Long.toString(size)));
        arguments.addAll(List.of(ucxMemory ? "--memory=ucx" : "--memory=own", "--batches=" + TIMED_PASSES));
        return CompiledBaseline.measure(PROGRAM, compiler, arguments, blockSizes);
    }

    /**
     * Describes the UCX transports both sides use.
     *
     * @return {@code UCX_TLS=value}, or that it is unset and UCX chooses.
     */
    public static String transports()
    {
        String tls = System.getenv("UCX_TLS");
        return tls == null || tls.isBlank() ? "UCX_TLS unset (UCX's choice)" : "UCX_TLS=" + tls;
    }
}
