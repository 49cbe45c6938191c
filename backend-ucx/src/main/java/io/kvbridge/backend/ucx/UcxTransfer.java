package io.kvbridge.backend.ucx;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.MemorySegment;

/**
 * One posted transfer, resolved at post time into primitive arrays the owner thread issues from: one
 * entry per operation, a run of coalesced pairs being one entry. Slots are reused: the arrays only
 * grow, so steady-state posting allocates nothing.
 */
final class UcxTransfer
{
    static final int QUEUED = 0;
    static final int FLUSHING = 1;
    static final int NOTIFYING = 2;

    final int slot;
    // guarded by the backend's slot lock
    int generation;
    boolean released = true;

    // written by the posting thread before the transfer is queued, read by the owner thread
    long[] localAddresses = new long[16];
    long[] remoteAddresses = new long[16];
    long[] lengths = new long[16];
    long[] memoryHandles = new long[16];
    long[] remoteKeys = new long[16];
    int pairs;
    int operations;
    long bytes;
    TransferOp op;
    UcxPeer peer;
    UcxPreparedList localList;
    UcxPreparedList remoteList;
    byte[] notification = new byte[0];
    int notificationLength = -1;
    long postedNanos;

    volatile TransferStatus status = TransferStatus.DONE;
    volatile KvBridgeException failure;
    volatile boolean cancelled;

    // owner thread only
    UcxTransfer nextPosted;
    int phase;
    long request;
    boolean issued;
    byte failedStatus;
    String failedCall;
    KvBridgeException ownerFailure;
    MemorySegment sendBuffer;

    UcxTransfer(int slot)
    {
        this.slot = slot;
    }

    long handle()
    {
        return ((long) generation << 32) | slot;
    }

    void ensureCapacity(int pairs)
    {
        if (localAddresses.length < pairs) {
            int size = Math.max(pairs, localAddresses.length * 2);
            localAddresses = new long[size];
            remoteAddresses = new long[size];
            lengths = new long[size];
            memoryHandles = new long[size];
            remoteKeys = new long[size];
        }
    }

    void setNotification(byte[] message)
    {
        if (message == null) {
            notificationLength = -1;
            return;
        }
        if (notification.length < message.length) {
            notification = new byte[Math.max(message.length, notification.length * 2)];
        }
        System.arraycopy(message, 0, notification, 0, message.length);
        notificationLength = message.length;
    }

    /** Drops references so a finished transfer keeps no lists or peers alive. */
    void clearReferences()
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
    }
}
