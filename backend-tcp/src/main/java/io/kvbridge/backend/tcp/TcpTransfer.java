package io.kvbridge.backend.tcp;

import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.CoalescedTransferSlot;
import io.kvbridge.transport.NotificationCopy;

/**
 * One posted transfer: its coalesced runs, grant key and notification, filled by the poster, then
 * handed to the owner thread, which writes its frames and takes its answer. Slots are reused, so
 * a steady stream of posts allocates nothing; the owner tells a reused slot from the transfer it
 * queued by the handle it queued it under.
 *
 * <p>Threads: the poster fills the fields before the hand-over; the owner thread alone uses them after.
 */
final class TcpTransfer extends CoalescedTransferSlot implements FrameWriter.Source
{
    final NotificationCopy notification = new NotificationCopy();
    final byte[] grantKey = new byte[TransferBackend.MAX_GRANT_KEY_BYTES];
    int grantKeyLength;
    TransferOp op;
    TcpPreparedList localList;
    TcpPeer peer;
    long deadlineNanos;
    private TcpTransferBackend backend;

    // owner thread: READ runs received, and whether the transfer ended
    int arrived;
    boolean ended;

    TcpTransfer(int index)
    {
        super(index);
    }

    void prepare(TcpTransferBackend owningBackend)
    {
        backend = owningBackend;
        arrived = 0;
        ended = false;
    }

    /** {@return how many request frames a READ of this transfer takes} */
    int readFrames()
    {
        return (copies.size() + TcpWire.MAX_READ_RUNS - 1) / TcpWire.MAX_READ_RUNS;
    }

    @Override
    public boolean nextFrame(FrameWriter writer, long queuedHandle)
    {
        return ((InitiatorConnection) writer.connection).nextFrame(this, writer, queuedHandle);
    }

    @Override
    public void left(FrameWriter writer, long queuedHandle, boolean written)
    {
        ((InitiatorConnection) writer.connection).left();
    }

    @Override
    protected void runOnOwner()
    {
        backend.start(this);
    }

    @Override
    protected void abandoned(RuntimeException cause)
    {
        backend.abandoned(this, cause);
    }

    @Override
    protected void clearReferences()
    {
        localList = null;
        peer = null;
    }
}
