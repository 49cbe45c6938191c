package io.kvbridge.spi.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import org.junit.jupiter.api.Test;

final class CacheMemoryTest
{
    private static final Allocation FIRST = new Allocation(0x1000, 0x1000, MemoryKind.DEVICE, 0);
    private static final Allocation SECOND = new Allocation(0x4000, 0x1000, MemoryKind.DEVICE, 0);

    @Test
    void aViewBelongsToTheAllocationHoldingAllItsBlocks()
    {
        CacheMemory memory = CacheMemory.of(List.of(FIRST, SECOND));
        assertEquals(SECOND, memory.allocationHolding(new LayerView("l", 0x4000 + 64, 64, 128, 31)));
        assertEquals(FIRST, memory.allocationHolding(new LayerView("l", 0x1000, 64, 64, 64)));
    }

    @Test
    void aViewRunningPastItsAllocationIsRejected()
    {
        CacheMemory memory = CacheMemory.of(List.of(FIRST, SECOND));
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> memory.allocationHolding(new LayerView("l", 0x1000, 64, 64, 65)));
        assertEquals(ErrorCode.LAYOUT_UNSUPPORTED, e.code());
        assertTrue(e.getMessage().contains("layer l: view [0x1000, 0x2040) lies in no allocation"), e.getMessage());
    }
}
