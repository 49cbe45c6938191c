package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The baseline of the {@code cuda-ipc} device rows: {@code cuda_d2d_peak.c} (packaged with the command
 * line), compiled against the CUDA toolkit's {@code cuda.h} and linked to the driver the transport
 * binds, copies the same total in the same block sizes device to device with {@code cuMemcpyAsync}
 * in one process, timed as the bench times the transport. Where the transport is bound to a driver
 * file of its own ({@value #LIBRARY_PROPERTY}, such as kvbridge's test fake), the baseline is linked
 * to and run with that one, so both figures come from the same driver.
 */
public final class CudaD2dBaseline
{
    /** The transport this baseline is compared with. */
    public static final String TRANSPORT = "cuda-ipc";
    /** Where the transport finds the driver, when not on the linker's path. */
    public static final String LIBRARY_PROPERTY = "kvbridge.cuda-ipc.library";

    private static final Pattern LINE = Pattern.compile("cuda_d2d_peak block=(\\d+) total=\\d+ copies=\\d+ best ([0-9.]+) GB/s");

    private CudaD2dBaseline()
    {
    }

    /**
     * Compiles and runs the baseline on a device; never throws for a missing toolkit or a failing
     * program, it says why instead.
     *
     * @param compiler the C compiler command, normally {@code gcc}.
     * @param device the device ordinal.
     * @param totalBytes bytes copied per block size.
     * @param blockSizes the block sizes.
     * @return the figures, or the reason there are none.
     */
    public static BaselineResult measure(String compiler, int device, long totalBytes, List<Long> blockSizes)
    {
        requireNonNull(blockSizes, "blockSizes is null");
        Path toolkit = Path.of(System.getenv().getOrDefault("CUDA_HOME", "/usr/local/cuda"));
        if (!Files.isRegularFile(toolkit.resolve("include/cuda.h"))) {
            return BaselineResult.unavailable("no CUDA toolkit headers at " + toolkit.resolve("include/cuda.h") + "; install the CUDA toolkit or set "
                    + "CUDA_HOME to it, to measure the device-to-device cuMemcpy baseline");
        }
        List<String> libraries = new ArrayList<>(List.of("-I" + toolkit.resolve("include")));
        Path driverDirectory = CompiledBaseline.libraryDirectory(LIBRARY_PROPERTY);
        if (driverDirectory != null) {
            libraries.add("-L" + driverDirectory);
        }
        // the driver's own file name: toolkits without stubs have no libcuda.so to link against
        libraries.add("-l:libcuda.so.1");
        CompiledBaseline.Program program = new CompiledBaseline.Program("cuda_d2d_peak.c", libraries, LINE, "device-to-device cuMemcpy baseline",
                "", 300);
        List<String> arguments = new ArrayList<>(List.of(Integer.toString(device), Long.toString(totalBytes)));
        blockSizes.forEach(size -> arguments.add(Long.toString(size)));
        return CompiledBaseline.measure(program, compiler, arguments, blockSizes,
                driverDirectory == null ? Map.of() : Map.of("LD_LIBRARY_PATH", driverDirectory.toString()));
    }
}
