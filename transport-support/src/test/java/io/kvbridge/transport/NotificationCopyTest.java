package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

final class NotificationCopyTest
{
    @Test
    void keepsItsOwnCopyAndGrowsOnlyForLongerMessages()
    {
        NotificationCopy copy = new NotificationCopy();
        assertFalse(copy.present());
        byte[] message = {1, 2, 3, 4};
        copy.set(message);
        message[0] = 9;
        assertTrue(copy.present());
        assertEquals(4, copy.length());
        assertArrayEquals(new byte[] {1, 2, 3, 4}, Arrays.copyOf(copy.bytes(), copy.length()), "the caller's later change is not seen");
        byte[] buffer = copy.bytes();
        copy.set(new byte[] {7, 8});
        assertSame(buffer, copy.bytes(), "a shorter message reuses the buffer");
        assertArrayEquals(new byte[] {7, 8}, Arrays.copyOf(copy.bytes(), copy.length()));
        copy.set(null);
        assertFalse(copy.present());
        assertEquals(-1, copy.length());
    }
}
