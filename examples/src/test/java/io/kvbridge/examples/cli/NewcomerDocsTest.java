package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** What a newcomer reads first stays true to the command line: the README's command table, its length and code fences, the help. */
final class NewcomerDocsTest
{
    private static final Path README = Path.of("..", "README.md");
    private static final int MAX_README_LINES = 300;

    @Test
    void readmeCommandTableNamesEveryCommand() throws IOException
    {
        List<String> table = Files.readAllLines(README).stream().filter(line -> line.startsWith("| `kvbridge ")).toList();
        List<String> missing = new ArrayList<>();
        for (CommandLine command : KvBridgeCli.commandLine(false).getSubcommands().values()) {
            String name = command.getCommandName();
            if (!command.getCommandSpec().usageMessage().hidden() && table.stream().noneMatch(row -> row.startsWith("| `kvbridge " + name))) {
                missing.add(name);
            }
        }
        assertEquals(List.of(), missing, "commands missing from the README's command table");
    }

    @Test
    void readmeIsShortAndEveryCodeFenceCloses() throws IOException
    {
        List<String> lines = Files.readAllLines(README);
        assertTrue(lines.size() < MAX_README_LINES, "README.md has " + lines.size() + " lines; keep it under " + MAX_README_LINES);
        int opened = -1;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (!line.startsWith("```")) {
                continue;
            }
            if (opened < 0) {
                opened = i + 1;
            }
            else {
                assertEquals("```", line, "README.md line " + (i + 1) + " should close the fence opened on line " + opened);
                opened = -1;
            }
        }
        assertEquals(-1, opened, "README.md: the fence opened on line " + opened + " never closes");
    }

    @Test
    void benchHelpNamesEveryBaselineTheCompilerBuilds()
    {
        CliRun help = CliRun.of("bench", "--help");
        // the option's description, not the synopsis: from its line in the list to the next option's
        int from = help.out().indexOf("\n      --cc=CC ");
        String cc = help.out().substring(from, help.out().indexOf("\n      --device=N", from)).replaceAll("\\s+", " ");
        for (String baseline : List.of("memcpy", "UCX", "NIXL", "TCP stream", "device to device")) {
            assertTrue(cc.contains(baseline), "bench --help, --cc: " + baseline + " is compiled with it too: " + cc);
        }
    }
}
