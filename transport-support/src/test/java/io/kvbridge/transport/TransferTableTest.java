package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferStatus;
import org.junit.jupiter.api.Test;

final class TransferTableTest
{
    private static final class Slot extends TransferSlot
    {
        Object reference = new Object();

        Slot(int index)
        {
            super(index);
        }

        @Override
        protected void clearReferences()
        {
            reference = null;
        }
    }

    private final TransferTable<Slot> table = new TransferTable<>("test transport 'a'", 2, Slot::new);

    @Test
    void aReleasedHandleIsNeverAcceptedAgainEvenWhenItsSlotIsReused()
    {
        Slot first = table.acquire();
        long handle = first.handle();
        table.finish(first, null);
        assertEquals(TransferStatus.DONE, table.status(handle));
        assertFalse(table.release(handle), "a finished transfer is released at once");
        Slot again = table.acquire();
        assertSame(first, again, "the free slot is reused");
        assertNotEquals(handle, again.handle());
        assertCode(ErrorCode.HANDLE_UNKNOWN, () -> table.status(handle));
        assertCode(ErrorCode.HANDLE_UNKNOWN, () -> table.release(handle));
    }

    @Test
    void releasingARunningTransferCancelsItAndItsSlotReturnsWhenItFinishes()
    {
        Slot running = table.acquire();
        long handle = running.handle();
        table.acquire();
        assertTrue(table.release(handle), "still running: the transport must stop it");
        assertTrue(running.cancelled());
        assertEquals(1, table.unreleased());
        assertEquals(2, table.occupied(), "the cancelled transfer keeps its slot until it finishes");
        assertCode(ErrorCode.TRANSFER_FAILED, table::acquire);
        table.finish(running, new KvBridgeException(ErrorCode.TRANSFER_FAILED, "cancelled"));
        assertEquals(1, table.occupied());
        assertEquals(null, running.reference, "a finished transfer keeps nothing alive");
        table.acquire();
    }

    @Test
    void failureIsReportedOnlyForFailedTransfers()
    {
        Slot slot = table.acquire();
        long handle = slot.handle();
        assertTrue(table.failure(handle).isEmpty());
        KvBridgeException cause = new KvBridgeException(ErrorCode.TRANSFER_FAILED, "broken");
        table.finish(slot, cause);
        assertEquals(TransferStatus.FAILED, table.status(handle));
        assertSame(cause, table.failure(handle).orElseThrow());
    }

    @Test
    void closeReleasesEveryHandleAndRefusesNewOnes()
    {
        long running = table.acquire().handle();
        table.close();
        assertEquals(0, table.unreleased());
        assertEquals(0, table.occupied());
        assertCode(ErrorCode.HANDLE_UNKNOWN, () -> table.status(running));
        assertCode(ErrorCode.CLOSED, table::acquire);
    }

    @Test
    void anAbandonedPostLeavesNothingHeld()
    {
        Slot slot = table.acquire();
        long handle = slot.handle();
        table.abandon(slot);
        assertEquals(0, table.unreleased());
        assertEquals(0, table.occupied());
        assertCode(ErrorCode.HANDLE_UNKNOWN, () -> table.status(handle));
    }

    @Test
    void madeUpHandlesAreRefused()
    {
        table.acquire();
        assertCode(ErrorCode.HANDLE_UNKNOWN, () -> table.status(-1L));
        assertCode(ErrorCode.HANDLE_UNKNOWN, () -> table.status(7L));
        assertCode(ErrorCode.HANDLE_UNKNOWN, () -> table.status(1L << 40));
    }

    static void assertCode(ErrorCode code, Runnable action)
    {
        assertEquals(code, assertThrows(KvBridgeException.class, action::run).code());
    }
}
