package io.kvbridge.backend.ucx;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.transport.NotificationCopy;
import io.kvbridge.transport.TransferSlot;
import java.lang.foreign.MemorySegment;

/**
 * One posted transfer, resolved at post time into coalesced copies the owner thread issues from:
 * one copy per operation, with the region ids that give its memory handle and remote key. Slots
 * are reused and their buffers only grow, so steady-state posting allocates nothing. The slot is
 * also the work handed to the owner thread: running it starts the transfer.
 *
 * <p>Threads: the posting thread writes the request fields before it hands the slot over, the
 * owner thread reads them after; the owner-thread fields are touched by the owner thread only
 * (and by {@link #clearReferences()} under the table's lock once the transfer ended).
 */
final class UcxTransfer extends TransferSlot
{
    static final int QUEUED = 0;
    static final int FLUSHING = 1;
    static final int NOTIFYING = 2;

    private final UcxTransfers transfers;

    // written by the posting thread before the transfer is handed over, read by the owner thread
    final DescriptorPairs copies = new DescriptorPairs(16);
    int pairs;
    long bytes;
    TransferOp op;
    UcxPeer peer;
    UcxPreparedList localList;
    UcxPreparedList remoteList;
    final NotificationCopy notification = new NotificationCopy();
    long postedNanos;

    // owner thread only
    int phase;
    int activeIndex = -1;
    long request;
    boolean issued;
    byte failedStatus;
    String failedCall;
    KvBridgeException ownerFailure;
    MemorySegment sendBuffer;

    UcxTransfer(int index, UcxTransfers transfers)
    {
        super(index);
        this.transfers = transfers;
    }

    @Override
    protected void runOnOwner()
    {
        transfers.start(this);
    }

    @Override
    protected void abandoned(RuntimeException cause)
    {
        transfers.abandoned(this);
    }

    /** One put or get per coalesced run. */
    @Override
    protected int operations()
    {
        return copies.size();
    }

    /** Drops references so a finished transfer keeps no lists or peers alive. */
    @Override
    protected void clearReferences()
    {
        peer = null;
        localList = null;
        remoteList = null;
        sendBuffer = null;
        ownerFailure = null;
        failedCall = null;
        failedStatus = 0;
        request = 0;
        issued = false;
        phase = QUEUED;
        activeIndex = -1;
    }
}
