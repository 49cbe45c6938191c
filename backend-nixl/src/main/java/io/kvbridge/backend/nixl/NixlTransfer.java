package io.kvbridge.backend.nixl;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.TransferSlot;

/**
 * One transfer slot of a {@code nixl} instance. Slots are reused and posted without allocating: the
 * poster fills the arguments and makes and posts the NIXL request itself under the agent lock, or
 * hands the slot to the owner thread, which does so while the poster waits (NIXL may refuse a
 * request synchronously).
 *
 * <p>Threads: the post arguments are written by the poster before the post and read by whoever
 * makes the request; the native request and the pending release are guarded by the agent lock;
 * the lists stay referenced while the request runs and are dropped when it ends.
 */
final class NixlTransfer extends TransferSlot
{
    private final NixlTransfers transfers;

    // post arguments
    TransferOp op;
    NixlPreparedList local;
    NixlPreparedList remote;
    int[] localIndices;
    int[] remoteIndices;
    int count;
    byte[] notification;
    // the descriptors NIXL makes of the pairs after merging, computed when the post is checked
    int operations;

    // under the agent lock: the NIXL request, 0 when none
    long request;
    // NIXL could not release the request yet: the outcome waits until it can
    boolean releasePending;
    KvBridgeException pendingFailure;

    NixlTransfer(NixlTransfers transfers, int index)
    {
        super(index);
        this.transfers = transfers;
    }

    @Override
    protected void runOnOwner()
    {
        transfers.makeAndPost(this);
    }

    /** Drops what only the post needed; the lists stay while the request runs. */
    void clearArguments()
    {
        localIndices = null;
        remoteIndices = null;
        notification = null;
    }

    /** The descriptors NIXL issues after merging index runs (see {@link StrideRuns}). */
    @Override
    protected int operations()
    {
        return operations;
    }

    @Override
    protected void clearReferences()
    {
        local = null;
        remote = null;
        clearArguments();
    }
}
