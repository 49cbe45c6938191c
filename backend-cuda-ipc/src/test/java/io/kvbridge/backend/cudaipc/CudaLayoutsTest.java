package io.kvbridge.backend.cudaipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.backend.cudaipc.ffm.CudaLayouts;
import io.kvbridge.testkit.NativeFakes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The binding's struct sizes, offsets and enum values against the installed {@code cuda.h}: a C
 * program compiled against the toolkit headers prints each fact under the name
 * {@link CudaLayouts#facts()} uses, and the signatures the batch binding assumes must match the
 * header's function-pointer types ({@code cudaTypedefs.h}) for it to compile. Skipped, saying why, where the headers or gcc are missing.
 */
final class CudaLayoutsTest
{
    private static final Path HEADERS = Path.of(System.getProperty("kvbridge.cuda-ipc.test.headers", "/usr/local/cuda/include"));

    @Test
    void layoutsAndValuesMatchTheDriverHeaders(@TempDir Path dir) throws Exception
    {
        assumeTrue(Files.isRegularFile(HEADERS.resolve("cuda.h")), "no CUDA headers at " + HEADERS + " (set -Dkvbridge.cuda-ipc.test.headers=DIR)");
        StringBuilder c = new StringBuilder("#include <cuda.h>\n#include <cudaTypedefs.h>\n#include <stdio.h>\n#include <stddef.h>\n");
        // the batch call's two ABIs and cuGetProcAddress_v2 as CudaMemcpyBatch binds them: a mismatch does not compile
        c.append("static const PFN_cuMemcpyBatchAsync_v13000 batchV2 = (CUresult (*)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, ")
                .append("CUmemcpyAttributes *, size_t *, size_t, CUstream)) 0;\n");
        c.append("static const PFN_cuMemcpyBatchAsync_v12080 batchV1 = (CUresult (*)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, ")
                .append("CUmemcpyAttributes *, size_t *, size_t, size_t *, CUstream)) 0;\n");
        c.append("static const PFN_cuGetProcAddress_v12000 procAddress = (CUresult (*)(const char *, void **, int, cuuint64_t, ")
                .append("CUdriverProcAddressQueryResult *)) 0;\n");
        c.append("int main(void) {\n  (void) batchV2; (void) batchV1; (void) procAddress;\n");
        for (String name : CudaLayouts.facts().keySet()) {
            c.append("  printf(\"%s=%lld\\n\", \"").append(name).append("\", (long long) (").append(name).append("));\n");
        }
        c.append("  return 0;\n}\n");
        Path source = dir.resolve("layouts.c");
        Files.writeString(source, c.toString());
        Path binary = dir.resolve("layouts");
        NativeFakes.assumeGccRuns("the CUDA layout check compiles a program against the driver headers");
        Process compile = new ProcessBuilder("gcc", "-Werror=incompatible-pointer-types", "-I" + HEADERS, "-o", binary.toString(), source.toString()).redirectErrorStream(true).start();
        String compileOutput = new String(compile.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assumeTrue(compile.waitFor(60, TimeUnit.SECONDS), "gcc did not finish in 60 s");
        assertEquals(0, compile.exitValue(), () -> "the layout program does not compile against " + HEADERS + ":\n" + compileOutput);
        Process run = new ProcessBuilder(binary.toString()).start();
        String output = new String(run.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        run.waitFor(10, TimeUnit.SECONDS);
        Map<String, Long> fromHeaders = new LinkedHashMap<>();
        for (String line : output.split("\n")) {
            int eq = line.lastIndexOf('=');
            if (eq > 0) {
                fromHeaders.put(line.substring(0, eq), Long.parseLong(line.substring(eq + 1)));
            }
        }
        assertEquals(CudaLayouts.facts(), fromHeaders, "the Java layouts and constants differ from cuda.h");
    }
}
