package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The demo's byte check finds a page that is wrong in any way the transfer could make it wrong. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
final class DemoEngineTest
{
    @Test
    void checkCountsEveryWrongByte()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment page = arena.allocate(8192, 8);
            DemoEngine.fill(page, 7, 3, 5, 4096);
            assertEquals(0, DemoEngine.check(page, 7, 3, 5, 4096));
            page.set(ValueLayout.JAVA_BYTE, 1234, (byte) (page.get(ValueLayout.JAVA_BYTE, 1234) ^ 1));
            assertEquals(1, DemoEngine.check(page, 7, 3, 5, 4096), "one flipped byte");
            DemoEngine.fill(page, 7, 3, 5, 4096);
            assertTrue(DemoEngine.check(page, 8, 3, 5, 4096) > 8000, "another request's page");
            assertTrue(DemoEngine.check(page, 7, 4, 5, 4096) > 8000, "another layer's page");
            assertTrue(DemoEngine.check(page, 7, 3, 6, 4096) > 8000, "another block of the prompt");
            assertTrue(DemoEngine.check(page, 7, 3, 5, 0) > 8000, "the other tensor-parallel slice of the block");
        }
    }
}
