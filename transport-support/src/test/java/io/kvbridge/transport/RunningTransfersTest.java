package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The owner's list of running transfers: grows past its first size, removes while walked. */
final class RunningTransfersTest
{
    private static final class Slot extends TransferSlot
    {
        Slot(int index)
        {
            super(index);
        }

        @Override
        protected void clearReferences()
        {
        }
    }

    @Test
    void removingWhileWalkingVisitsEveryTransferOnce()
    {
        RunningTransfers<Slot> running = new RunningTransfers<>();
        for (int i = 0; i < 200; i++) {
            running.add(new Slot(i));
        }
        assertEquals(200, running.size());
        Set<Integer> visited = new HashSet<>();
        for (int i = 0; i < running.size();) {
            Slot slot = running.get(i);
            assertTrue(visited.add(slot.index()), "visited twice: " + slot.index());
            if (slot.index() % 2 == 0) {
                running.removeAt(i);
            }
            else {
                i++;
            }
        }
        assertEquals(200, visited.size());
        assertEquals(100, running.size());
        for (int i = 0; i < running.size(); i++) {
            assertEquals(1, running.get(i).index() % 2);
        }
    }

    @Test
    void indicesOutsideTheRunningOnesAreRefused()
    {
        RunningTransfers<Slot> running = new RunningTransfers<>();
        assertTrue(running.isEmpty());
        Slot slot = new Slot(0);
        running.add(slot);
        assertSame(slot, running.get(0));
        assertThrows(IndexOutOfBoundsException.class, () -> running.get(1));
        running.removeAt(0);
        assertTrue(running.isEmpty());
        assertThrows(IndexOutOfBoundsException.class, () -> running.removeAt(0));
    }
}
