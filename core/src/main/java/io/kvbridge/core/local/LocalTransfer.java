package io.kvbridge.core.local;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.CoalescedTransferSlot;
import io.kvbridge.transport.Grants;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One posted transfer, resolved at post time into coalesced absolute copies. Slots are reused: the
 * copy buffer grows to the largest transfer seen and is never reallocated below it, so steady-state
 * posting allocates nothing but the notification copy.
 *
 * <p>Threads: the poster fills every field before the transfer is queued; copy threads then only
 * read them, and count down {@code pendingParts}; the table's lock clears the references.
 */
final class LocalTransfer extends CoalescedTransferSlot
{
    // in copies, local side = the initiator's memory; WRITE copies local to remote, READ remote to local
    final AtomicInteger pendingParts = new AtomicInteger();
    boolean write;
    long bytes;
    int parts;
    LocalPreparedList localList;
    LocalPreparedList remoteList;
    byte[] notification;
    // the target's grant that admitted the transfer, held until it ends
    Grants.Entry admitted;
    LocalTransferBackend admittedBy;
    // the failure of a part; the part finishing last reports it, ordered by the countdown of pendingParts
    KvBridgeException partFailure;

    LocalTransfer(int index)
    {
        super(index);
    }

    @Override
    protected void clearReferences()
    {
        localList = null;
        remoteList = null;
        notification = null;
        admitted = null;
        admittedBy = null;
    }
}
