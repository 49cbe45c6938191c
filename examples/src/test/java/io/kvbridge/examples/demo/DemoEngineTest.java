package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.geometry.KvPart;
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
            // 2 heads x 32 tokens x 128 bytes, heads outermost, the second tensor-parallel rank's heads
            DemoEngine.Page where = new DemoEngine.Page(3, KvPart.JOINT, 160, 32, 2, 2, true, 128);
            DemoEngine.fill(page, where, 7);
            assertEquals(0, DemoEngine.check(page, where, 7, Integer.MAX_VALUE));
            page.set(ValueLayout.JAVA_BYTE, 1234, (byte) (page.get(ValueLayout.JAVA_BYTE, 1234) ^ 1));
            assertEquals(1, DemoEngine.check(page, where, 7, Integer.MAX_VALUE), "one flipped byte");
            DemoEngine.fill(page, where, 7);
            assertTrue(DemoEngine.check(page, where, 8, Integer.MAX_VALUE) > 8000, "another request's page");
            assertTrue(DemoEngine.check(page, new DemoEngine.Page(4, KvPart.JOINT, 160, 32, 2, 2, true, 128), 7, Integer.MAX_VALUE) > 8000,
                    "another layer's page");
            assertTrue(DemoEngine.check(page, new DemoEngine.Page(3, KvPart.KEY, 160, 32, 2, 2, true, 128), 7, Integer.MAX_VALUE) > 8000,
                    "the layer's key plane");
            assertTrue(DemoEngine.check(page, new DemoEngine.Page(3, KvPart.JOINT, 192, 32, 2, 2, true, 128), 7, Integer.MAX_VALUE) > 8000,
                    "the next block of the prompt");
            assertTrue(DemoEngine.check(page, new DemoEngine.Page(3, KvPart.JOINT, 160, 32, 0, 2, true, 128), 7, Integer.MAX_VALUE) > 8000,
                    "the other tensor-parallel rank's heads");
            assertTrue(DemoEngine.check(page, new DemoEngine.Page(3, KvPart.JOINT, 160, 32, 2, 2, false, 128), 7, Integer.MAX_VALUE) > 6000,
                    "the same tokens and heads in tokens-outermost order");
        }
    }

    @Test
    void tokensThePeerNeverWroteMustStayZero()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment page = arena.allocate(4096, 8);
            // 1 head x 32 tokens x 128 bytes: tokens 16..31 lie past what a 16-token producer block wrote
            DemoEngine.Page where = new DemoEngine.Page(0, KvPart.JOINT, 0, 32, 0, 1, true, 128);
            DemoEngine.fill(page, where, 1);
            // content bytes are random, a few of them zero by chance
            assertTrue(DemoEngine.check(page, where, 1, 16) > 2000, "the second half holds content where zeros belong");
            page.asSlice(2048).fill((byte) 0);
            assertEquals(0, DemoEngine.check(page, where, 1, 16));
            page.set(ValueLayout.JAVA_BYTE, 3000, (byte) 1);
            assertEquals(1, DemoEngine.check(page, where, 1, 16), "a stray byte in the unwritten tail");
        }
    }
}
