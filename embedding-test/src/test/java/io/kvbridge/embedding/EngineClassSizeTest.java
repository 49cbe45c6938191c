package io.kvbridge.embedding;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * Core's transfer engine keeps every class under {@value #MAX_LINES} lines: the ranks' roles and
 * their runtime grow with every feature, and a class that passes the bound is split along one of
 * its parts (as {@code ReceiveReports}, {@code ConsumerHeartbeats}, {@code ProducerStages} and
 * {@code TransferOutcomes} were), not left to grow.
 */
class EngineClassSizeTest
{
    private static final int MAX_LINES = 500;
    private static final Path ENGINE = Path.of(BuildFiles.require("kvbridge.root")).resolve("core/src/main/java/io/kvbridge/core/engine");

    @Test
    void noEngineClassIsOverTheBound()
    {
        List<Path> sources = sources();
        assertFalse(sources.isEmpty(), "no sources under " + ENGINE);
        List<String> large = sources.stream().filter(file -> lines(file) > MAX_LINES)
                .map(file -> file.getFileName() + " has " + lines(file) + " lines").toList();
        assertEquals(List.of(), large, "core/engine keeps every class under " + MAX_LINES + " lines: split these along one of their parts");
    }

    private static List<Path> sources()
    {
        try (Stream<Path> files = Files.list(ENGINE)) {
            return files.filter(file -> file.toString().endsWith(".java")).sorted().toList();
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static long lines(Path file)
    {
        try (Stream<String> lines = Files.lines(file)) {
            return lines.count();
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }
}
