package io.kvbridge.backend.ucx;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.CoalescedTransferSlot;
import io.kvbridge.transport.NotificationCopy;
import io.kvbridge.transport.RefusedRun;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

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
final class UcxTransfer extends CoalescedTransferSlot
{
    static final int QUEUED = 0;
    static final int FLUSHING = 1;
    static final int NOTIFYING = 2;
    // access=granted: flushed, waiting for the target's answer (WRITE) or the runs' data (READ)
    static final int AWAITING = 3;

    private final UcxTransfers transfers;

    int pairs;
    long bytes;
    TransferOp op;
    UcxPeer peer;
    UcxPreparedList localList;
    UcxPreparedList remoteList;
    final NotificationCopy notification = new NotificationCopy();
    long postedNanos;
    // the handle as the posting thread saw it, echoed by the target's messages
    long wireHandle;
    final byte[] grantKey = new byte[io.kvbridge.spi.transfer.TransferBackend.MAX_GRANT_KEY_BYTES];
    int grantKeyLength;

    // owner thread only
    int phase;
    int activeIndex = -1;
    long request;
    boolean issued;
    byte failedStatus;
    String failedCall;
    KvBridgeException ownerFailure;
    MemorySegment sendBuffer;
    // access=granted, owner thread only: the message headers (kept until the flush), answers, READ runs arrived
    MemorySegment amHeaders;
    boolean acknowledged;
    boolean sendsPending;
    byte refusal;
    final RefusedRun refused = new RefusedRun();
    int arrived;
    int pendingReceives;
    private long[] arrivedRuns = new long[1];
    private MemorySegment largeHeaders = MemorySegment.NULL;

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

    /** {@return header memory past the owner's buffer sizes (transfers of thousands of runs), kept for the slot's next such transfer} */
    MemorySegment largeHeaders(long bytes)
    {
        if (largeHeaders.byteSize() < bytes) {
            largeHeaders = java.lang.foreign.Arena.ofAuto().allocate(bytes, 8);
        }
        return largeHeaders;
    }

    /** Clears the owner's per-run state before the transfer is issued. */
    void resetGranted()
    {
        acknowledged = false;
        sendsPending = false;
        refusal = 0;
        arrived = 0;
        pendingReceives = 0;
        int words = (copies.size() + 63) >>> 6;
        if (arrivedRuns.length < words) {
            arrivedRuns = new long[Math.max(words, arrivedRuns.length * 2)];
        }
        Arrays.fill(arrivedRuns, 0, words, 0L);
    }

    /** Records that a READ run's data arrived; false when it already had (a peer that sends a run twice). */
    boolean markArrived(int run)
    {
        long bit = 1L << (run & 63);
        if ((arrivedRuns[run >>> 6] & bit) != 0) {
            return false;
        }
        arrivedRuns[run >>> 6] |= bit;
        return true;
    }

    /** Drops references so a finished transfer keeps no lists or peers alive. */
    @Override
    protected void clearReferences()
    {
        peer = null;
        localList = null;
        remoteList = null;
        sendBuffer = null;
        amHeaders = null;
        ownerFailure = null;
        failedCall = null;
        failedStatus = 0;
        request = 0;
        issued = false;
        phase = QUEUED;
        activeIndex = -1;
    }
}
