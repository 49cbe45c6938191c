package io.kvbridge.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The table {@code ./kvbridge test} ends with (tools/SkippedTests.java), read from test reports as Surefire writes them. */
final class SkippedTestsTableTest
{
    @Test
    void everySkippedClassIsListedWithItsReasonAndTheLastLineNamesWhatToInstallForEach(@TempDir Path root) throws Exception
    {
        report(root, "backend-cuda-ipc", "io.kvbridge.backend.cudaipc.CudaLayoutsTest",
                "no CUDA headers at /usr/local/cuda/include (set -Dkvbridge.cuda-ipc.test.headers=DIR)");
        report(root, "backend-nixl", "io.kvbridge.backend.nixl.NixlPeerLossTest",
                "gcc not found: the native fakes of NIXL and the CUDA driver were not built; install gcc");
        List<String> lines = table(root);
        assertTrue(lines.contains("kvbridge test: 2 tests, 0 failures, 0 errors, 2 skipped"), String.join("\n", lines));
        assertTrue(lines.stream().anyMatch(line -> line.contains("backend-cuda-ipc: io.kvbridge.backend.cudaipc.CudaLayoutsTest") && line.contains("no CUDA headers")),
                String.join("\n", lines));
        String install = lines.getLast();
        assertEquals("kvbridge test: to run what was skipped, install the CUDA toolkit's headers (cuda.h, under /usr/local/cuda/include or where"
                + " -Dkvbridge.cuda-ipc.test.headers points); gcc (apt-get install gcc)", install);
    }

    @Test
    void everyWayATestSaysUcxIsMissingNamesLibucx0(@TempDir Path root) throws Exception
    {
        report(root, "backend-nixl", "io.kvbridge.backend.nixl.ffm.LoadedUcxTest", "/usr/lib/x86_64-linux-gnu/libucp.so.0 is not installed (Debian's libucx0)");
        report(root, "examples", "io.kvbridge.examples.cli.TlsBenchTest", "the ucx transport is not available here");
        for (String module : List.of("backend-nixl", "examples")) {
            Path other = Files.createDirectories(root.resolve("only-" + module));
            Files.move(root.resolve(module), other.resolve(module));
            assertEquals("kvbridge test: to run what was skipped, install libucx0 (apt-get install libucx0)", table(other).getLast(), module);
        }
    }

    private static void report(Path root, String module, String className, String reason) throws IOException
    {
        Path reports = Files.createDirectories(root.resolve(module).resolve("target").resolve("surefire-reports"));
        Files.writeString(reports.resolve("TEST-" + className + ".xml"), """
                <?xml version="1.0" encoding="UTF-8"?>
                <testsuite name="%1$s" tests="1" failures="0" errors="0" skipped="1">
                  <testcase name="aTest" classname="%1$s" time="0.001">
                    <skipped message="%2$s"/>
                  </testcase>
                </testsuite>
                """.formatted(className, reason), StandardCharsets.UTF_8);
    }

    private static List<String> table(Path root) throws IOException, InterruptedException
    {
        Process tool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), Path.of("..", "tools", "SkippedTests.java").toString(),
                root.toString(), "0").redirectErrorStream(true).start();
        String output = new String(tool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(tool.waitFor(60, TimeUnit.SECONDS), "SkippedTests did not end within 60 s");
        assertEquals(0, tool.exitValue(), output);
        return output.strip().lines().toList();
    }
}
