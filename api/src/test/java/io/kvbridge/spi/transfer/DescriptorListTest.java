package io.kvbridge.spi.transfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import org.junit.jupiter.api.Test;

final class DescriptorListTest
{
    @Test
    void validListsAreWrappedWithoutCopying()
    {
        DescriptorList list = DescriptorList.wrap(MemoryKind.DEVICE, 1, new long[] {0x1000, 0x2000, 7}, new long[] {16, 32, 9}, 2);
        assertEquals(2, list.size());
        assertArrayEquals(new long[] {0x1000, 0x2000}, list.addresses());
        assertEquals(48, list.totalBytes());
    }

    @Test
    void everyDescriptorIsChecked()
    {
        assertRejected(new long[] {0x1000, 0x2000}, new long[] {16, 0}, "descriptor 1: length=0 is not positive");
        assertRejected(new long[] {0x1000, 0}, new long[] {16, 16}, "descriptor 1: address=0x0 length=16 is not a valid range");
        assertRejected(new long[] {Long.MAX_VALUE - 8}, new long[] {16}, "descriptor 0: address=0x7ffffffffffffff7 length=16 is not a valid range");
        assertRejected(new long[] {0x1000}, new long[] {-4}, "descriptor 0: length=-4 is not positive");
    }

    private static void assertRejected(long[] addresses, long[] lengths, String message)
    {
        KvBridgeException error = assertThrows(KvBridgeException.class,
                () -> DescriptorList.wrap(MemoryKind.HOST, 0, addresses, lengths, addresses.length));
        assertEquals(ErrorCode.INVALID_ARGUMENT, error.code());
        assertTrue(error.getMessage().contains(message), error::getMessage);
    }
}
