package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.transfer.TransferOp;
import org.junit.jupiter.api.Test;

class RefusedRunTest
{
    @Test
    void keepsTheRunUntilCleared()
    {
        RefusedRun refused = new RefusedRun();
        refused.set(3, 0x1000, 4096);
        assertEquals(3, refused.run());
        assertEquals(0x1000, refused.address());
        assertEquals(4096, refused.length());
        refused.clear();
        assertEquals(0, refused.run());
        assertEquals(0, refused.address());
        assertEquals(0, refused.length());
    }

    @Test
    void describesTheRunAndTheKey()
    {
        RefusedRun refused = new RefusedRun();
        refused.set(1, 0x2a0, 64);
        assertEquals("WRITE of 64 bytes at 0x2a0 under a key of 16 bytes: no live grant has that key",
                refused.describe(TransferOp.WRITE, 16, "no live grant has that key"));
        assertEquals("READ of 64 bytes at 0x2a0 under no key: outside its grant for READ", refused.describe(TransferOp.READ, 0, "outside its grant for READ"));
    }
}
