package io.kvbridge.examples.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The command line in a child JVM, for runs bound to a test fake of a native library: the fake is
 * loaded there, never into the test's own JVM, where a later test could bind it by accident.
 */
final class ChildCli
{
    private static final long DEADLINE_SECONDS = 150;

    /** One run: its exit code and both streams. */
    record Run(int exitCode, String out, String err)
    {
    }

    private ChildCli()
    {
    }

    /**
     * The command line as a child JVM of this test's class path, not started yet, its stdout and
     * stderr going to {@code out.txt} and {@code err.txt} in {@code directory}.
     *
     * @param directory where the streams are kept.
     * @param jvmOptions JVM options besides native access.
     * @param args the command line's arguments.
     * @return the builder, its environment this process's without UCX's signal handlers.
     */
    static ProcessBuilder builder(Path directory, List<String> jvmOptions, String... args)
    {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"));
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")), KvBridgeCli.class.getName()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(directory.resolve("out.txt").toFile())
                .redirectError(directory.resolve("err.txt").toFile());
        // UCX (under nixl and ucx) must not install its signal handlers in a JVM
        builder.environment().put("UCX_ERROR_SIGNALS", "");
        return builder;
    }

    /**
     * Runs the command line with extra JVM options and waits for it.
     *
     * @param directory where the streams are kept.
     * @param jvmOptions such as {@code -Dkvbridge.nixl.library=...}.
     * @param args the command line's arguments.
     * @return the run.
     */
    static Run run(Path directory, List<String> jvmOptions, String... args) throws IOException, InterruptedException
    {
        Path out = directory.resolve("out.txt");
        Path err = directory.resolve("err.txt");
        Process process = builder(directory, jvmOptions, args).start();
        if (!process.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("kvbridge " + String.join(" ", args) + " did not end within " + DEADLINE_SECONDS + " s: "
                    + Files.readString(err, StandardCharsets.UTF_8));
        }
        return new Run(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }
}
