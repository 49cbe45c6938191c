package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpEndpoint;
import io.kvbridge.backend.ucx.ffm.UcpStatus;
import io.kvbridge.backend.ucx.ffm.UcpWorker;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.OwnerThread;
import io.kvbridge.transport.PostChecks;
import io.kvbridge.transport.TransferTable;
import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Moving data: a transfer is one {@code ucp_put_nbx} / {@code ucp_get_nbx} per coalesced copy,
 * followed by one {@code ucp_ep_flush_nbx}. When the flush completes every byte is in place at the
 * peer (WRITE) or here (READ), and only then is the notification sent as a tagged message. One
 * copy must be covered by one registration on each side, which is why copies coalesce only within
 * one region on each side: its memory handle and remote key come from its region ids. Requests are
 * polled, never called back.
 *
 * <p>Threads: {@link #post} runs on the posting thread and hands the slot to the owner thread
 * without allocating; everything else, and every field but the final ones, belongs to the owner
 * thread ({@link #abandoned} excepted: it runs wherever the owner's end finds the transfer queued).
 */
final class UcxTransfers
{
    // progress the worker every so many operations while issuing a long transfer
    static final int PROGRESS_EVERY = 64;

    private final UcxOptions options;
    private final UcxWorker worker;
    private final UcxMemory memory;
    private final UcxEndpoints endpoints;
    private final UcxMessaging messaging;
    private final Inbox inbox;
    private final OwnerThread owner;
    private final TransferTable<UcxTransfer> table;
    private final boolean granted;
    private final long instanceId;
    // keys the upper half of wire handles: a process that sees none of this instance's traffic
    // cannot guess a live transfer's handle to forge its answer or READ data
    private final long wireHandleKey = new SecureRandom().nextLong();
    private volatile boolean closing;

    // owner thread only: issued transfers by slot index, for the target's answers (access=granted)
    private UcxTransfer[] issuedBySlot = new UcxTransfer[64];

    // owner thread only: transfers flushing or sending their notification
    private UcxTransfer[] active = new UcxTransfer[64];
    private int activeCount;

    UcxTransfers(String description, long instanceId, UcxOptions options, UcxWorker worker, UcxMemory memory, UcxEndpoints endpoints,
            UcxMessaging messaging, Inbox inbox, OwnerThread owner)
    {
        this.instanceId = instanceId;
        this.options = options;
        this.worker = worker;
        this.memory = memory;
        this.endpoints = endpoints;
        this.messaging = messaging;
        this.inbox = inbox;
        this.owner = owner;
        this.table = new TransferTable<>(description, options.maxInFlight(), index -> new UcxTransfer(index, this));
        this.granted = options.granted();
    }

    TransferTable<UcxTransfer> table()
    {
        return table;
    }

    /**
     * Resolves checked lists into coalesced copies in a reused slot and hands it to the owner
     * thread; the posting thread. Allocates nothing once the slot's buffers are large enough.
     *
     * @return the handle.
     */
    long post(TransferRequest request)
    {
        UcxPreparedList remote = (UcxPreparedList) request.remote();
        UcxTransfer transfer = table.acquire();
        try {
            transfer.bytes = PostChecks.resolve(transfer.copies, request, true);
            transfer.pairs = request.count();
            transfer.op = request.op();
            transfer.peer = (UcxPeer) remote.transportPeer();
            transfer.localList = (UcxPreparedList) request.local();
            transfer.remoteList = remote;
            transfer.notification.set(request.notification());
            transfer.postedNanos = System.nanoTime();
            transfer.wireHandle = wireHandle(transfer.handle());
            transfer.grantKeyLength = PostChecks.copyGrantKey(request, transfer.grantKey);
        }
        catch (RuntimeException e) {
            table.abandon(transfer);
            throw e;
        }
        long handle = transfer.handle();
        try {
            owner.submit(transfer);
        }
        catch (KvBridgeException e) {
            // the owner stopped before the transfer was queued: nothing refers to the slot yet
            table.abandon(transfer);
            throw e;
        }
        return handle;
    }

    /** Marks the instance closing: transfers that reach the owner from now on do not start. */
    void closing()
    {
        closing = true;
    }

    /** Starts a transfer the owner thread took from its queue. */
    void start(UcxTransfer transfer)
    {
        UcxPeer peer = transfer.peer;
        String problem;
        if (transfer.cancelled()) {
            problem = "it was released before it started";
        }
        else if (closing) {
            problem = "the transport is closing";
        }
        else if (peer.unusableReason() != null) {
            problem = "peer '" + peer.name() + "' cannot be used: " + peer.unusableReason();
        }
        else {
            problem = transfer.localList.deadMemoryReason();
            if (problem == null) {
                problem = transfer.remoteList.deadMemoryReason();
            }
        }
        if (problem != null) {
            transfer.ownerFailure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " did not start: " + problem);
            finish(transfer);
            return;
        }
        issue(transfer);
    }

    /** Ends a transfer the owner thread stopped before it could start it. */
    void abandoned(UcxTransfer transfer)
    {
        table.finish(transfer, new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " did not start: the transport was closed"));
        inbox.wake();
    }

    private void issue(UcxTransfer transfer)
    {
        UcxPeer peer = transfer.peer;
        UcxPreparedList local = transfer.localList;
        transfer.issued = true;
        peer.inFlight++;
        memory.retain(local);
        if (granted) {
            issueMessages(transfer);
            if (!transfer.sendsPending) {
                // every message left at once: nothing of this side's memory is still in use, no flush to wait for
                flushed(transfer, UcpStatus.OK);
                return;
            }
        }
        else {
            issueRma(transfer);
        }
        // the flush also waits for operations issued before a failure, which still use the memory
        long flush = UcpEndpoint.epFlushNbx(peer.endpoint, worker.emptyParam());
        if (flush == 0) {
            flushed(transfer, UcpStatus.OK);
        }
        else if (UcpStatus.isError(flush)) {
            flushed(transfer, UcpStatus.statusOf(flush));
        }
        else {
            transfer.request = flush;
            transfer.phase = UcxTransfer.FLUSHING;
            addActive(transfer);
        }
    }

    private void issueRma(UcxTransfer transfer)
    {
        UcxPreparedList local = transfer.localList;
        UcxPreparedList remote = transfer.remoteList;
        long endpoint = transfer.peer.endpoint;
        MemorySegment rmaParam = worker.rmaParam();
        long param = rmaParam.address();
        boolean write = transfer.op == TransferOp.WRITE;
        var copies = transfer.copies;
        int operations = copies.size();
        int lastRegion = -1;
        for (int i = 0; i < operations; i++) {
            int region = copies.localRegion(i);
            if (region != lastRegion) {
                lastRegion = region;
                UcpWorker.setMemoryHandle(rmaParam, local.memoryHandle(region));
            }
            long remoteKey = remote.remoteKey(copies.remoteRegion(i));
            long request = write
                    ? UcpEndpoint.putNbx(endpoint, copies.localAddress(i), copies.length(i), copies.remoteAddress(i), remoteKey, param)
                    : UcpEndpoint.getNbx(endpoint, copies.localAddress(i), copies.length(i), copies.remoteAddress(i), remoteKey, param);
            if (request != 0) {
                if (UcpStatus.isError(request)) {
                    transfer.failedStatus = UcpStatus.statusOf(request);
                    transfer.failedCall = write ? "ucp_put_nbx" : "ucp_get_nbx";
                    break;
                }
                // completion is observed through the flush below
                UcpWorker.requestFree(request);
            }
            if (i % PROGRESS_EVERY == PROGRESS_EVERY - 1) {
                UcpWorker.workerProgress(worker.worker());
            }
        }
    }

    /**
     * The handle a transfer's messages carry: the slot index in the lower half, so answers find the
     * slot, and above it 32 bits mixed from the slot's handle (unique per post) and this instance's
     * secret key (the finaliser of SplitMix64), so they are not guessable from outside.
     */
    private long wireHandle(long handle)
    {
        long z = handle + wireHandleKey;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return (z & 0xFFFF_FFFF_0000_0000L) | (handle & 0xFFFF_FFFFL);
    }

    /** access=granted: makes the transfer findable by the target's answers, then sends its messages ({@link UcxGrantedSends}). */
    private void issueMessages(UcxTransfer transfer)
    {
        transfer.resetGranted();
        int slot = (int) transfer.wireHandle;
        if (slot >= issuedBySlot.length) {
            issuedBySlot = Arrays.copyOf(issuedBySlot, Math.max(slot + 1, issuedBySlot.length * 2));
        }
        issuedBySlot[slot] = transfer;
        if (transfer.op == TransferOp.WRITE) {
            UcxGrantedSends.writes(transfer, worker, instanceId, options.eagerMaxBytes());
        }
        else {
            UcxGrantedSends.readRequests(transfer, worker, instanceId);
        }
    }

    /**
     * Returns the issued access=granted transfer a target's message names, or null: a handle this
     * side never issued, or one that already ended. Owner thread.
     */
    UcxTransfer awaiting(long handle)
    {
        int slot = (int) handle;
        if (slot < 0 || slot >= issuedBySlot.length) {
            return null;
        }
        UcxTransfer transfer = issuedBySlot[slot];
        // issued and not finished: answers may come while the transfer is still being issued (its progress calls run handlers)
        return transfer != null && transfer.wireHandle == handle && transfer.issued ? transfer : null;
    }

    private void flushed(UcxTransfer transfer, byte status)
    {
        if (!granted || status != UcpStatus.OK || transfer.failedCall != null || transfer.ownerFailure != null) {
            afterFlush(transfer, status);
            return;
        }
        if (transfer.phase == UcxTransfer.QUEUED) {
            addActive(transfer);
        }
        transfer.phase = UcxTransfer.AWAITING;
        awaited(transfer);
    }

    /**
     * Ends an access=granted transfer once the target answered (WRITE) or every run's data is in
     * place (READ); fails it on a refusal, a failed peer or a deadline, but only once no receive
     * still writes into its memory.
     *
     * @return whether the transfer moved on.
     */
    private boolean awaited(UcxTransfer transfer)
    {
        if (transfer.pendingReceives > 0) {
            return false;
        }
        if (transfer.refusal != UcxActiveMessages.RESULT_OK) {
            transfer.ownerFailure = UcxGrantedSends.refused(transfer, describe(transfer));
            finish(transfer);
            return true;
        }
        boolean complete = transfer.op == TransferOp.WRITE ? transfer.acknowledged : transfer.arrived == transfer.copies.size();
        if (complete) {
            releaseHeaders(transfer);
            afterFlush(transfer, UcpStatus.OK);
            return true;
        }
        if (transfer.failedCall != null || transfer.ownerFailure != null || transfer.cancelled() || transfer.peer.failed) {
            if (transfer.ownerFailure == null && transfer.failedCall == null) {
                transfer.ownerFailure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " failed: peer '" + transfer.peer.name()
                        + "' became unusable before it " + (transfer.op == TransferOp.WRITE ? "acknowledged the data" : "sent every run") + ": "
                        + transfer.peer.unusableReason());
            }
            finish(transfer);
            return true;
        }
        return false;
    }

    private void releaseHeaders(UcxTransfer transfer)
    {
        MemorySegment headers = transfer.amHeaders;
        if (headers != null) {
            transfer.amHeaders = null;
            if (headers.byteSize() <= NativeBuffers.MAX_BYTES) {
                worker.buffers().give(headers);
            }
        }
    }

    private void afterFlush(UcxTransfer transfer, byte status)
    {
        if (status != UcpStatus.OK && transfer.failedCall == null) {
            transfer.failedStatus = status;
            transfer.failedCall = "ucp_ep_flush_nbx";
        }
        UcxPeer peer = transfer.peer;
        if (transfer.failedCall != null || transfer.cancelled() || !transfer.notification.present() || transfer.ownerFailure != null) {
            finish(transfer);
            return;
        }
        if (peer.failed || peer.endpoint == 0) {
            // the endpoint is closed or closing by force: nothing more can be sent to the peer
            transfer.ownerFailure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " moved its data but peer '"
                    + peer.name() + "' became unusable before the notification was sent: " + peer.unusableReason());
            finish(transfer);
            return;
        }
        MemorySegment buffer = messaging.message(transfer.notification.bytes(), transfer.notification.length());
        long request = UcpEndpoint.tagSendNbx(peer.endpoint, buffer, messaging.messageLength(transfer.notification.length()), UcxMessaging.TAG_NOTIFY,
                worker.emptyParam());
        if (request == 0 || UcpStatus.isError(request)) {
            messaging.give(buffer);
            if (request != 0) {
                transfer.failedStatus = UcpStatus.statusOf(request);
                transfer.failedCall = "ucp_tag_send_nbx (notification)";
            }
            finish(transfer);
            return;
        }
        transfer.sendBuffer = buffer;
        transfer.request = request;
        if (transfer.phase == UcxTransfer.QUEUED) {
            addActive(transfer);
        }
        transfer.phase = UcxTransfer.NOTIFYING;
    }

    /** Moves the flushing and notifying transfers along; each round. */
    boolean advance()
    {
        boolean progressed = false;
        int i = 0;
        while (i < activeCount) {
            UcxTransfer transfer = active[i];
            if (transfer.phase == UcxTransfer.AWAITING) {
                if (awaited(transfer)) {
                    progressed = true;
                    if (i < activeCount && active[i] == transfer) {
                        i++;
                    }
                }
                else {
                    i++;
                }
                continue;
            }
            byte status = UcpWorker.requestStatus(transfer.request);
            if (status == UcpStatus.IN_PROGRESS) {
                i++;
                continue;
            }
            UcpWorker.requestFree(transfer.request);
            transfer.request = 0;
            progressed = true;
            if (transfer.phase == UcxTransfer.FLUSHING) {
                flushed(transfer, status);
            }
            else {
                if (status != UcpStatus.OK && transfer.failedCall == null) {
                    transfer.failedStatus = status;
                    transfer.failedCall = "ucp_tag_send_nbx (notification)";
                }
                messaging.give(transfer.sendBuffer);
                transfer.sendBuffer = null;
                finish(transfer);
            }
            // afterFlush and finish may have removed the entry at i: re-examine the same index
            if (i < activeCount && active[i] == transfer) {
                i++;
            }
        }
        return progressed;
    }

    /** @return true while transfers wait for UCX. */
    boolean busy()
    {
        return activeCount > 0;
    }

    private void addActive(UcxTransfer transfer)
    {
        if (activeCount == active.length) {
            active = Arrays.copyOf(active, active.length * 2);
        }
        transfer.activeIndex = activeCount;
        active[activeCount++] = transfer;
    }

    private void removeActive(UcxTransfer transfer)
    {
        int index = transfer.activeIndex;
        UcxTransfer last = active[--activeCount];
        active[index] = last;
        last.activeIndex = index;
        active[activeCount] = null;
        transfer.activeIndex = -1;
    }

    /** Ends a transfer that may be in the active set. */
    private void finish(UcxTransfer transfer)
    {
        if (transfer.activeIndex >= 0) {
            removeActive(transfer);
        }
        UcxPeer peer = transfer.peer;
        releaseHeaders(transfer);
        if (granted && transfer.issued && issuedBySlot[(int) transfer.wireHandle] == transfer) {
            issuedBySlot[(int) transfer.wireHandle] = null;
        }
        if (transfer.issued) {
            peer.inFlight--;
            memory.release(transfer.localList);
            endpoints.destroyRetiredKeys(peer);
        }
        KvBridgeException failure = transfer.ownerFailure;
        if (failure == null && transfer.failedCall != null) {
            String unusable = peer.unusableReason();
            failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " failed: "
                    + UcpStatus.describeFailure(transfer.failedCall, transfer.failedStatus)
                    + (unusable != null ? "; peer '" + peer.name() + "' is unusable: " + unusable : ""),
                    UcpStatus.error(transfer.failedCall, transfer.failedStatus));
        }
        if (failure == null && transfer.cancelled()) {
            failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " was released before it finished");
        }
        table.finish(transfer, failure);
        inbox.wake();
    }

    static String describe(UcxTransfer transfer)
    {
        return String.format(Locale.ROOT, "%s of %d descriptor pairs in %d operations (%d bytes) %s peer '%s'", transfer.op, transfer.pairs,
                transfer.copies.size(), transfer.bytes, transfer.op == TransferOp.WRITE ? "to" : "from", transfer.peer.name());
    }

    /** Fails the transfers that ran past {@code transfer-timeout-ms}; every so many rounds. */
    void checkDeadlines()
    {
        if (options.transferTimeoutMillis() == 0) {
            return;
        }
        long now = System.nanoTime();
        long limit = TimeUnit.MILLISECONDS.toNanos(options.transferTimeoutMillis());
        for (int i = 0; i < activeCount; i++) {
            UcxTransfer transfer = active[i];
            if (transfer.ownerFailure == null && now - transfer.postedNanos > limit) {
                // RMA operations cannot be cancelled one by one: closing the endpoint by force
                // completes them, which frees the transfer's memory for reuse
                transfer.ownerFailure = new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, describe(transfer) + " did not finish within "
                        + UcxOptions.TRANSFER_TIMEOUT_MS + "=" + options.transferTimeoutMillis() + "; its peer is treated as dead");
                endpoints.markFailed(transfer.peer, "a transfer did not finish within " + UcxOptions.TRANSFER_TIMEOUT_MS + "="
                        + options.transferTimeoutMillis());
            }
        }
    }

    /**
     * Closes by force the endpoint of every issued transfer that was released while it ran: RMA
     * operations cannot be cancelled one by one, and the releasing caller may reuse the memory at
     * once. Their flush or send then completes with an error, which ends them. Owner thread.
     *
     * @return whether an endpoint was closed.
     */
    boolean cancelReleased()
    {
        boolean closed = false;
        for (int i = 0; i < activeCount; i++) {
            UcxTransfer transfer = active[i];
            if (transfer.cancelled() && !transfer.peer.failed) {
                endpoints.markFailed(transfer.peer, describe(transfer) + " was released while in flight: UCX cannot cancel one operation, so the"
                        + " endpoint was closed by force; connect again");
                closed = true;
            }
        }
        if (closed) {
            endpoints.advanceRetiring();
        }
        return closed;
    }

    /** Abandons whatever UCX did not complete in time at shutdown; destroying the worker ends it. */
    void cutOff()
    {
        while (activeCount > 0) {
            UcxTransfer transfer = active[0];
            if (transfer.request != 0) {
                UcpWorker.requestFree(transfer.request);
                transfer.request = 0;
            }
            if (transfer.sendBuffer != null) {
                messaging.give(transfer.sendBuffer);
                transfer.sendBuffer = null;
            }
            transfer.ownerFailure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " was cut off: the transport was closed");
            finish(transfer);
        }
    }
}
