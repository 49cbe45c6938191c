package io.kvbridge.backend.nixl;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferStatus;

/**
 * One transfer slot. Slots are reused and posted without allocating: the poster fills the
 * arguments and parks while the owner thread makes and posts the NIXL request.
 */
final class NixlTransfer extends OwnerWork
{
    private final NixlTransferBackend backend;
    final int slot;

    // under the backend's slot lock
    int generation;
    boolean released = true;
    // true once the owner holds no native request for the slot any more
    boolean ownerDone = true;

    volatile TransferStatus status = TransferStatus.DONE;
    volatile KvBridgeException failure;
    // the user released the handle while the transfer was running: the owner cancels it
    volatile boolean cancelRequested;

    // owner only
    long request;
    NixlPeer peer;
    NixlPreparedList localList;
    boolean releasePending;
    TransferStatus pendingStatus;
    KvBridgeException pendingFailure;

    // post arguments: written by the poster, read and cleared by the owner while the poster waits
    TransferOp op;
    NixlPreparedList local;
    int[] localIndices;
    NixlPreparedList remote;
    int[] remoteIndices;
    int count;
    byte[] notification;

    NixlTransfer(NixlTransferBackend backend, int slot)
    {
        this.backend = backend;
        this.slot = slot;
    }

    long handle()
    {
        return ((long) generation << 32) | slot;
    }

    @Override
    void runOnOwner()
    {
        backend.postOnOwner(this);
    }

    void clearArguments()
    {
        local = null;
        remote = null;
        localIndices = null;
        remoteIndices = null;
        notification = null;
    }
}
