package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The NIXL baseline next to the {@code nixl} transport: {@code nixl_probe.c} (packaged with the
 * command line), linked to the {@code libnixl_capi.so} the transport binds ({@value #LIBRARY_PROPERTY}
 * when set, else the linker's search path), runs two agents in one process, as the bench runs two
 * instances, and writes the same total in the same block sizes: one request naming every block,
 * unmerged, posted once per pass. With one request per block (its {@code --request-per-block}) it
 * makes, posts and releases a request per block instead, as the transport posts one block per
 * transfer, so the two figures together show NIXL's own cost per request. Against kvbridge's test
 * fake of the library its figures are the fake's, and the bench labels them so.
 */
public final class NixlProbeBaseline
{
    /** The transport this baseline is compared with. */
    public static final String TRANSPORT = "nixl";
    /** Where the transport finds the library, when not on the linker's path. */
    public static final String LIBRARY_PROPERTY = "kvbridge.nixl.library";
    /** Timed passes per block size. */
    public static final int TIMED_PASSES = 5;

    private static final String LINE = "nixl_probe write%s block=(\\d+) total=\\d+ batches=\\d+ mean [0-9.]+ GB/s best ([0-9.]+) GB/s";

    private NixlProbeBaseline()
    {
    }

    /**
     * Compiles and runs the probe; never throws for a missing library or a failing probe, it says
     * why instead.
     *
     * @param compiler the C compiler command, normally {@code gcc}.
     * @param totalBytes bytes written per block size.
     * @param blockSizes the block sizes.
     * @param requestPerBlock one request per block instead of one per pass.
     * @return the figures, or the reason there are none.
     */
    public static BaselineResult measure(String compiler, long totalBytes, List<Long> blockSizes, boolean requestPerBlock)
    {
        requireNonNull(blockSizes, "blockSizes is null");
        List<String> libraries = new ArrayList<>();
        Path directory = CompiledBaseline.libraryDirectory(LIBRARY_PROPERTY);
        if (directory != null) {
            libraries.addAll(List.of("-L" + directory, "-Wl,-rpath," + directory));
        }
        libraries.add("-lnixl_capi");
        // the probe names its mode in each line, so a line of the other mode is never read as this one's
        Pattern line = Pattern.compile(String.format(LINE, requestPerBlock ? " per-block" : ""));
        CompiledBaseline.Program program = new CompiledBaseline.Program("nixl_probe.c", libraries, line,
                requestPerBlock ? "NIXL per-block probe baseline" : "NIXL probe baseline", "", 600);
        List<String> arguments = new ArrayList<>(List.of("write", Long.toString(totalBytes)));
        blockSizes.forEach(size -> arguments.add(Long.toString(size)));
        arguments.add("--batches=" + TIMED_PASSES);
        if (requestPerBlock) {
            arguments.add("--request-per-block");
        }
        // NIXL's UCX installs signal handlers the probe does not want either; the JVM already runs with it empty
        return CompiledBaseline.measure(program, compiler, arguments, blockSizes, Map.of("UCX_ERROR_SIGNALS", ""));
    }
}
