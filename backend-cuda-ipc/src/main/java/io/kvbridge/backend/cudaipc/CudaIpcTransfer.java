package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.CoalescedTransferSlot;
import io.kvbridge.transport.NotificationCopy;

/**
 * One posted transfer, reused with its slot: the coalesced copies, the notification bytes (copied,
 * since the caller may reuse its array), the event recorded after the last copy, and where the
 * owner thread is with it. Posting fills it on the caller's thread and hands it to the owner, which
 * issues the copies ({@link CudaIpcEngine#start}); nothing is allocated per post once the buffers
 * have grown to the largest request seen.
 */
final class CudaIpcTransfer extends CoalescedTransferSlot
{
    final CudaIpcEngine engine;
    TransferOp op;
    CudaIpcList local;
    CudaIpcList remote;
    CudaIpcPeer peer;
    final NotificationCopy notification = new NotificationCopy();
    // owner thread only
    long event;
    long deadlineNanos;
    boolean reached;
    KvBridgeException copyFailure;

    CudaIpcTransfer(int index, CudaIpcEngine engine)
    {
        super(index);
        this.engine = engine;
    }

    @Override
    protected void runOnOwner()
    {
        engine.start(this);
    }

    @Override
    protected void abandoned(RuntimeException cause)
    {
        engine.abandon(this, cause);
    }

    @Override
    protected void clearReferences()
    {
        local = null;
        remote = null;
        peer = null;
    }
}
