package io.kvbridge.engine.jlama;

import io.kvbridge.engine.jlama.serve.StreamedTtftBenchmark;
import io.kvbridge.engine.jlama.serve.StreamedTtftOptions;
import io.kvbridge.engine.jlama.serve.StreamedTtftReport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Jlama's streamed hand-off against the whole one at several prompt lengths
 * ({@link StreamedTtftBenchmark}); prints the medians and every pair as JSON. Off by default: run
 * with {@code -Dkvbridge.measure=true}, and {@code kvbridge.measure.lengths} (comma-separated,
 * default 256,1024,4096,8192), {@code .rounds} (timed pairs per length, 3), {@code .warmups} (1),
 * {@code .chunk} (Jlama's prompt chunk in both JVMs, 0 for its default of 256), {@code .mode}
 * (push) and {@code .backend} (tcp).
 */
@EnabledIfSystemProperty(named = "kvbridge.measure", matches = "true")
final class StreamedTtftMeasurement
{
    @Test
    void streamedAgainstWhole(@TempDir Path dir)
    {
        List<Integer> lengths = Stream.of(System.getProperty("kvbridge.measure.lengths", "256,1024,4096,8192").split(",")).map(Integer::parseInt).toList();
        StreamedTtftOptions options = new StreamedTtftOptions(System.getProperty("kvbridge.measure.backend", "tcp"),
                System.getProperty("kvbridge.measure.mode", "push"), "llama", lengths, Integer.getInteger("kvbridge.measure.rounds", 3),
                Integer.getInteger("kvbridge.measure.warmups", 1), true, 42, 16, Integer.getInteger("kvbridge.measure.chunk", 0));
        StreamedTtftReport report = StreamedTtftBenchmark.run(options, dir,
                System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
                pair -> System.err.println("pair " + pair));
        System.err.println(report.toText());
        System.err.println(report.toJson());
        assertTrue(report.allIdentical(), "streamed and whole gave different bits: " + report.toJson());
    }
}
