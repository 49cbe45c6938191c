package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** An inbox nobody drains holds no more than its bounds; what overflows is dropped and counted. */
final class InboxTest
{
    @Test
    void aFloodStaysWithinTheCountBoundAndIsCounted()
    {
        Inbox inbox = new Inbox(100, 1 << 20);
        int accepted = 0;
        for (int i = 0; i < 10_000; i++) {
            if (inbox.add("flooder", new byte[] {(byte) i})) {
                accepted++;
            }
        }
        assertEquals(100, accepted, "notifications taken");
        assertEquals(100, inbox.size(), "notifications held");
        assertEquals(9_900, inbox.dropped(), "notifications dropped");
        List<byte[]> drained = new ArrayList<>();
        assertEquals(100, inbox.drain((sender, message) -> drained.add(message)));
        assertArrayEquals(new byte[] {0}, drained.getFirst(), "the oldest are kept, the newest dropped");
        assertEquals(0, inbox.size(), "held after draining");
        assertEquals(0, inbox.bytes(), "bytes held after draining");
        assertTrue(inbox.add("peer", new byte[1]), "room again once drained");
    }

    @Test
    void aFloodStaysWithinTheByteBound()
    {
        Inbox inbox = new Inbox(1_000_000, 64 * 1024);
        for (int i = 0; i < 1_000; i++) {
            inbox.add("flooder", new byte[1024]);
        }
        assertEquals(64, inbox.size(), "64 KiB of 1 KiB notifications held");
        assertEquals(64 * 1024, inbox.bytes());
        assertEquals(936, inbox.dropped());
        assertFalse(inbox.add("flooder", new byte[1]), "a byte more than the bound");
        inbox.close();
        assertEquals(0, inbox.size(), "held after close");
        assertEquals(0, inbox.bytes(), "bytes held after close");
    }

    @Test
    void theDefaultInboxIsBounded()
    {
        Inbox inbox = new Inbox();
        for (int i = 0; i < Inbox.DEFAULT_MAX_MESSAGES + 10; i++) {
            inbox.add("flooder", new byte[0]);
        }
        assertEquals(Inbox.DEFAULT_MAX_MESSAGES, inbox.size());
        assertEquals(10, inbox.dropped());
    }
}
