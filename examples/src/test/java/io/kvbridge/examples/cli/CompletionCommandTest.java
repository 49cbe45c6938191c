package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The generated completion script, loaded into a real bash and asked what it completes. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class CompletionCommandTest
{
    private static final Path BASH = Path.of("/bin/bash");

    @TempDir
    Path directory;

    @ParameterizedTest(name = "kvbridge {0}<TAB>")
    @CsvSource(delimiter = '|', value = {
            "''|plugins demo bench inspect config completion",
            "demo --mode|push pull mixed",
            "demo --layout|hma mla per-layer",
            "demo --kv-planes|joint split blockwise",
            "demo --placement|per-layer cross-layer"})
    void completesCommandsAndListedValues(String words, String expected) throws Exception
    {
        assertEquals(expected, complete(words));
    }

    @Test
    void completesTheDiscoveredTransports() throws Exception
    {
        assertEquals(String.join(" ", new TransportNames()), complete("demo --backend"));
        assertTrue(complete("demo --backend").contains("local"));
    }

    @Test
    void theHiddenWorkerCommandIsNotOffered()
    {
        CliRun run = CliRun.of("completion");
        assertEquals(0, run.exitCode(), run.err());
        assertTrue(run.out().startsWith("#!/usr/bin/env bash"), run.out());
        assertTrue(!run.out().contains("demo-worker"), "the worker is started by the demo, never by hand");
    }

    /** @return what bash's completion of {@code kvbridge WORDS <TAB>} offers, space-separated. */
    private String complete(String words) throws Exception
    {
        assumeTrue(Files.isExecutable(BASH), "no bash at " + BASH);
        CliRun run = CliRun.of("completion");
        assertEquals(0, run.exitCode(), run.err());
        Path script = directory.resolve("kvbridge-completion.bash");
        Files.writeString(script, run.out(), StandardCharsets.UTF_8);
        String line = words.isEmpty() ? "kvbridge " : "kvbridge " + words + " ";
        String driver = """
                source "$1"
                read -r -a COMP_WORDS <<< "$2"
                COMP_WORDS+=("")
                COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
                COMP_LINE="$2"
                COMP_POINT=${#COMP_LINE}
                _complete_kvbridge kvbridge "" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
                echo "${COMPREPLY[*]}"
                """;
        Process bash = new ProcessBuilder(BASH.toString(), "-c", driver, "bash", script.toString(), line).redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        String offered = new String(bash.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(bash.waitFor(30, TimeUnit.SECONDS), "bash did not finish");
        assertEquals(0, bash.exitValue(), offered);
        return offered;
    }
}
