package io.kvbridge.examples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.testkit.NativeFakes;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class TcpStreamBaselineTest
{
    private static final List<Long> BLOCKS = List.of(32L << 10, 256L << 10, 4L << 20);

    @TempDir
    Path directory;

    @Test
    void oneLoopbackStreamGivesAFigurePerBlockSize()
    {
        NativeFakes.assumeGccRuns("the TCP stream baseline is compiled at run time");
        BaselineResult result = TcpStreamBaseline.measure("gcc", 8L << 20, BLOCKS);
        assertTrue(result.available(), result.reason());
        assertEquals(BLOCKS, List.copyOf(result.gigabytesPerSecond().keySet()), result.toString());
        result.gigabytesPerSecond().values().forEach(gbps -> assertTrue(gbps > 0 && Double.isFinite(gbps), result.toString()));
    }

    @Test
    void missingCompilerSaysWhatToInstall()
    {
        Path missing = directory.resolve("no-such-gcc");
        BaselineResult result = TcpStreamBaseline.measure(missing.toString(), 8L << 20, BLOCKS);
        assertFalse(result.available());
        assertEquals("C compiler " + missing + " not found; install gcc (apt-get install gcc) to measure the TCP stream baseline", result.reason());
    }

    @Test
    void aBlockThatDoesNotDivideTheTotalIsTheProgramsRefusal()
    {
        NativeFakes.assumeGccRuns("the TCP stream baseline is compiled at run time");
        BaselineResult result = TcpStreamBaseline.measure("gcc", 1L << 20, List.of(3000L));
        assertFalse(result.available());
        assertTrue(result.reason().contains("block 3000 must divide the total 1048576"), result.reason());
    }
}
