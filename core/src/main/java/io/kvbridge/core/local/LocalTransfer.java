package io.kvbridge.core.local;

import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferStatus;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One posted transfer, resolved at post time into coalesced absolute copies. Slots are reused: the
 * copy buffer grows to the largest transfer seen and is never reallocated below it, so steady-state
 * posting allocates nothing but the notification copy.
 */
final class LocalTransfer
{
    final int slot;
    int generation;

    // local side = the initiator's memory; WRITE copies local to remote, READ remote to local
    final DescriptorPairs copies = new DescriptorPairs(16);
    boolean write;
    long bytes;
    int parts;

    LocalPreparedList localList;
    LocalPreparedList remoteList;
    byte[] notification;

    final AtomicInteger pendingParts = new AtomicInteger();
    volatile TransferStatus status = TransferStatus.DONE;
    volatile KvBridgeException failure;
    volatile boolean cancelled;
    boolean released = true;

    LocalTransfer(int slot)
    {
        this.slot = slot;
    }

    long handle()
    {
        return ((long) generation << 32) | slot;
    }

    /** Drops references so a finished transfer keeps no lists, peers or messages alive. */
    void clearReferences()
    {
        localList = null;
        remoteList = null;
        notification = null;
    }
}
