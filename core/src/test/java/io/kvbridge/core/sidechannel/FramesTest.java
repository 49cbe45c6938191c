package io.kvbridge.core.sidechannel;

import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.AllocationMeter;
import io.kvbridge.spi.ErrorCode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import org.junit.jupiter.api.Test;

final class FramesTest
{
    static final int LIMIT = 16 << 20;

    @Test
    void roundTripsFramesAndEndsCleanly()
            throws IOException
    {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Frames.write(out, new byte[] {1, 2, 3});
        Frames.write(out, new byte[70_000]);
        InputStream in = new ByteArrayInputStream(out.toByteArray());
        assertArrayEquals(new byte[] {1, 2, 3}, Frames.read(in, LIMIT, "test"));
        assertArrayEquals(new byte[70_000], Frames.read(in, LIMIT, "test"));
        assertNull(Frames.read(in, LIMIT, "test"));
    }

    @Test
    void refusesAFourGibibyteFrameWithoutAllocatingIt()
    {
        byte[] header = {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff};
        long before = AllocationMeter.allocatedBytes();
        assertError(ErrorCode.PROTOCOL_ERROR, () -> Frames.read(new ByteArrayInputStream(header), LIMIT, "reply"),
                "reply frame length=4294967295 exceeds the limit of 16777216 bytes; refused without reading it");
        long allocated = AllocationMeter.allocatedBytes() - before;
        assertTrue(allocated < 1 << 20, "refusing the frame allocated " + allocated + " bytes");
    }

    @Test
    void refusesEmptyAndTruncatedFrames()
    {
        assertError(ErrorCode.PROTOCOL_ERROR, () -> Frames.read(new ByteArrayInputStream(new byte[4]), LIMIT, "request"), "request frame is empty");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> Frames.read(new ByteArrayInputStream(new byte[] {0, 0}), LIMIT, "request"),
                "header truncated after 2 of 4 bytes");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> Frames.read(new ByteArrayInputStream(new byte[] {0, 0, 0, 9, 1, 2}), LIMIT, "request"),
                "the stream ended after 2 of length=9 bytes");
    }
}
