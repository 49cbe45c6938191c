package io.kvbridge.transport;

import static io.kvbridge.transport.TransferTableTest.assertCode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import org.junit.jupiter.api.Test;

final class RegistrationsTest
{
    private final Registrations<Registration> registrations = new Registrations<>("test transport 'a'");
    private final Registration low = new Registration(new Allocation(0x10000, 0x1000, MemoryKind.HOST, 0));
    private final Registration high = new Registration(new Allocation(0x20000, 0x1000, MemoryKind.HOST, 0));

    @Test
    void findsTheRegistrationHoldingAWholeRange()
    {
        registrations.add(high);
        registrations.add(low);
        assertSame(low, registrations.find(0x10000, 0x1000, MemoryKind.HOST, 0));
        assertSame(high, registrations.find(0x20800, 0x800, MemoryKind.HOST, 0));
        assertNull(registrations.find(0x10800, 0x1000, MemoryKind.HOST, 0), "a range running past the end");
        assertNull(registrations.find(0x18000, 16, MemoryKind.HOST, 0), "a gap");
        assertNull(registrations.find(0x10000, 16, MemoryKind.DEVICE, 0), "another kind");
    }

    @Test
    void coverNamesEachDescriptorsRegistrationAndRefusesOneOutside()
    {
        registrations.add(low);
        registrations.add(high);
        DescriptorList list = DescriptorList.wrap(MemoryKind.HOST, 0, new long[] {0x20000, 0x10000, 0x20100}, new long[] {256, 256, 256}, 3);
        Coverage coverage = registrations.cover(list);
        assertArrayEquals(new int[] {0, 1, 0}, coverage.registrationIds());
        assertArrayEquals(new Registration[] {high, low}, coverage.registrations());
        DescriptorList outside = DescriptorList.wrap(MemoryKind.HOST, 0, new long[] {0x10000, 0x30000}, new long[] {256, 256}, 2);
        assertCode(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, () -> registrations.cover(outside));
    }

    @Test
    void overlapsAreRefusedAndRemovalRetires()
    {
        registrations.add(low);
        assertCode(ErrorCode.ALREADY_REGISTERED, () -> registrations.add(new Registration(new Allocation(0x10800, 0x1000, MemoryKind.HOST, 0))));
        assertSame(low, registrations.remove(low.allocation()));
        assertFalse(low.live());
        assertCode(ErrorCode.NOT_REGISTERED, () -> registrations.remove(low.allocation()));
        registrations.add(high);
        assertEquals(1, registrations.clear().size());
        assertFalse(high.live());
        assertEquals(0, registrations.size());
        assertTrue(registrations.all().isEmpty());
    }
}
