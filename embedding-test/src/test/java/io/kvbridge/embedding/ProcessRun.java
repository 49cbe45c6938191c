package io.kvbridge.embedding;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs a command to its end or its deadline, its output (stdout and stderr) kept in a file. */
final class ProcessRun
{
    record Result(int exitCode, String output)
    {
    }

    private ProcessRun()
    {
    }

    static Result run(List<String> command, Path directory, Map<String, String> environment, long seconds)
            throws IOException, InterruptedException
    {
        Path log = Files.createTempFile(directory, "run-", ".log");
        ProcessBuilder builder = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().putAll(environment);
        Process process = builder.start();
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly().waitFor();
            return new Result(-1, "timed out after " + seconds + " s: " + String.join(" ", command) + "\n" + Files.readString(log, StandardCharsets.UTF_8));
        }
        return new Result(process.exitValue(), "$ " + String.join(" ", command) + "\n" + Files.readString(log, StandardCharsets.UTF_8));
    }
}
