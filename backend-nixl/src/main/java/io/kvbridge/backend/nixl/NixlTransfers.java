package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.nixl.ffm.NixlAgent;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.PostChecks;
import io.kvbridge.transport.Registration;
import io.kvbridge.transport.RunningTransfers;
import io.kvbridge.transport.TransferTable;
import java.util.Locale;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transfers of one {@code nixl} instance: posting (checked on the caller's thread, made and
 * posted under the agent lock: by the caller when the owner leaves it free, else by the owner),
 * polling running requests until NIXL reports them complete, and
 * releasing each NIXL request as soon as its transfer ends.
 *
 * <p>With UCX the notification attached to a transfer leaves only when the initiator sees the data
 * in place, so polling to completion is what delivers it. A finished request is released and
 * destroyed at once; its outcome stays in the slot until the caller releases the handle, and a
 * handle released while its request runs cancels the request at the next poll.
 *
 * <p>Threads: the table is thread-safe; the running list is guarded by the agent lock (what is
 * marked "owner thread only" runs under it).
 */
final class NixlTransfers
{
    static final int MAX_NOTIFICATION_BYTES = 1 << 20;

    private static final Logger LOG = LoggerFactory.getLogger(NixlTransfers.class);

    private final InstanceGuard guard;
    private final NixlOwner owner;
    private final TransferTable<NixlTransfer> table;
    private final NixlPeerLoss peerLoss;
    private final boolean telemetry;
    // wakes the thread waiting for progress: run after every transfer ends
    private final Runnable ended;
    // transfers whose merged descriptor count, read from NIXL's telemetry, differed from the one reported
    private volatile long mergeMismatches;
    private volatile String lastMergeMismatch;

    // under the agent lock: transfers whose NIXL request was posted and not released
    private final RunningTransfers<NixlTransfer> running = new RunningTransfers<>();

    NixlTransfers(InstanceGuard guard, NixlOwner owner, int maxInFlight, boolean telemetry, Runnable ended)
    {
        this.ended = requireNonNull(ended, "ended is null");
        this.telemetry = telemetry;
        this.guard = requireNonNull(guard, "guard is null");
        this.owner = requireNonNull(owner, "owner is null");
        this.table = new TransferTable<>(guard.description(), maxInFlight, index -> new NixlTransfer(this, index));
        this.peerLoss = new NixlPeerLoss(owner);
    }

    /**
     * Checks the rest of a post that passed the opening checks ({@code PostChecks.opening}) on the
     * caller's thread, hands it to the owner and waits until NIXL accepted it.
     */
    long post(TransferRequest request, NixlPreparedList local, NixlPreparedList remote)
    {
        int[] localIndices = request.localIndices();
        int[] remoteIndices = request.remoteIndices();
        int count = request.count();
        if (count == 0) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "count=0: NIXL moves at least one descriptor pair; use notify() to send a message alone");
        }
        // NIXL takes the indices as they are and merges runs itself: they are only checked here
        PostChecks.pairs(request);
        NixlTransfer transfer = table.acquire();
        transfer.op = request.op();
        transfer.local = local;
        transfer.localIndices = localIndices;
        transfer.remote = remote;
        transfer.remoteIndices = remoteIndices;
        transfer.count = count;
        transfer.notification = request.notification();
        transfer.operations = StrideRuns.merged(local.runs(), localIndices, remote.runs(), remoteIndices, count);
        try {
            if (owner.tryEnter()) {
                boolean running = false;
                try {
                    running = makeAndPost(transfer);
                }
                finally {
                    owner.exit(running);
                }
            }
            else {
                owner.post(transfer);
            }
        }
        catch (RuntimeException e) {
            table.abandon(transfer);
            throw e;
        }
        return transfer.handle();
    }

    /**
     * Makes and posts the NIXL request of a slot, under the agent lock: on the poster's thread when
     * it entered, else on the owner thread while the poster waits.
     *
     * @return true when the request runs on, to be polled; false when it finished inside the post.
     */
    boolean makeAndPost(NixlTransfer transfer)
    {
        try {
            guard.checkOpen();
            // checked again here: lists, peers and registrations change only under the agent lock
            PostChecks.usable(transfer.local, transfer.remote);
            NixlAgent agent = owner.agent();
            long request;
            try {
                request = agent.makeRequest(transfer.op, transfer.local.handle(), transfer.localIndices, transfer.remote.handle(), transfer.remoteIndices,
                        transfer.count, transfer.notification);
            }
            catch (KvBridgeException e) {
                throw peerLoss.transferFailure(transfer.remote.transportPeer(), e);
            }
            boolean done;
            try {
                done = agent.postRequest(request);
            }
            catch (KvBridgeException e) {
                if (!agent.releaseRequest(request)) {
                    LOG.warn("NIXL kept a request of {} whose post failed; it is freed with the agent", guard.description());
                }
                throw peerLoss.transferFailure(transfer.remote.transportPeer(), e);
            }
            transfer.request = request;
            // finished inside the post: its notification is already on its way
            if (done && finish(transfer, null)) {
                return false;
            }
            running.add(transfer);
            return true;
        }
        finally {
            transfer.clearArguments();
        }
    }

    /**
     * Polls every running request once; owner thread only.
     *
     * @return whether any of them ended.
     */
    boolean pollRunning()
    {
        boolean changed = false;
        for (int i = 0; i < running.size();) {
            NixlTransfer transfer = running.get(i);
            boolean finished;
            if (transfer.releasePending) {
                finished = finish(transfer, transfer.pendingFailure);
            }
            else if (transfer.cancelled()) {
                finished = finish(transfer, new KvBridgeException(ErrorCode.TRANSFER_FAILED, "the transfer was released before it finished"));
            }
            else {
                boolean done;
                KvBridgeException failure = null;
                try {
                    done = owner.agent().pollRequest(transfer.request);
                }
                catch (KvBridgeException e) {
                    done = true;
                    failure = peerLoss.transferFailure(transfer.remote.transportPeer(), e);
                }
                finished = done && finish(transfer, failure);
            }
            if (finished) {
                running.removeAt(i);
                changed = true;
            }
            else {
                i++;
            }
        }
        return changed;
    }

    /** @return true while requests run; owner thread only. */
    boolean busy()
    {
        return !running.isEmpty();
    }

    /**
     * Counts the running transfers that move bytes of a registration; owner thread only.
     *
     * @param registration to be deregistered.
     * @return how many still touch it.
     */
    int touching(Registration registration)
    {
        int touching = 0;
        for (int i = 0; i < running.size(); i++) {
            NixlPreparedList local = running.get(i).local;
            for (int r = 0; r < local.registrationCount(); r++) {
                if (local.registration(r) == registration) {
                    touching++;
                    break;
                }
            }
        }
        return touching;
    }

    /**
     * Fails the running transfers to a peer before NIXL forgets it; owner thread only.
     *
     * @param peer the peer being forgotten.
     * @param reason their failure.
     */
    void failPeer(NixlPeer peer, KvBridgeException reason)
    {
        for (int i = 0; i < running.size();) {
            NixlTransfer transfer = running.get(i);
            if (transfer.remote.transportPeer() == peer && finish(transfer, reason)) {
                running.removeAt(i);
            }
            else {
                i++;
            }
        }
    }

    /**
     * Cancels every running request, retrying those NIXL cannot let go of yet until the deadline;
     * owner thread only, at shutdown.
     *
     * @param deadlineNanos {@link System#nanoTime()} after which the rest is left to the agent's destruction.
     */
    void cancelAll(long deadlineNanos)
    {
        KvBridgeException closing = new KvBridgeException(ErrorCode.TRANSFER_FAILED, guard.description() + " closed while the transfer ran");
        while (!running.isEmpty()) {
            for (int i = 0; i < running.size();) {
                if (finish(running.get(i), closing)) {
                    running.removeAt(i);
                }
                else {
                    i++;
                }
            }
            if (!running.isEmpty()) {
                if (System.nanoTime() > deadlineNanos) {
                    LOG.warn("{} NIXL request(s) of {} could not be cancelled in time; destroying the agent anyway", running.size(), guard.description());
                    return;
                }
                Thread.onSpinWait();
            }
        }
    }

    /**
     * Releases and destroys a request (cancelling it if it still runs) and publishes its outcome.
     *
     * @return false when NIXL could not cancel it yet: it stays running and is retried.
     */
    private boolean finish(NixlTransfer transfer, KvBridgeException failure)
    {
        if (transfer.request != 0 && failure == null && telemetry) {
            compareMerging(transfer);
        }
        if (transfer.request != 0) {
            boolean released;
            try {
                released = owner.agent().releaseRequest(transfer.request);
            }
            catch (KvBridgeException e) {
                // NIXL refused the release itself; the request is of no further use either way
                LOG.warn("releasing a NIXL request of {} failed; it is freed with the agent", guard.description(), e);
                released = true;
            }
            if (!released) {
                transfer.releasePending = true;
                transfer.pendingFailure = failure;
                return false;
            }
            transfer.request = 0;
        }
        transfer.releasePending = false;
        transfer.pendingFailure = null;
        table.finish(transfer, failure);
        ended.run();
        return true;
    }

    private void compareMerging(NixlTransfer transfer)
    {
        long merged;
        try {
            merged = owner.agent().mergedDescriptors(transfer.request);
        }
        catch (KvBridgeException e) {
            LOG.debug("no telemetry for a finished transfer of {}", guard.description(), e);
            return;
        }
        if (merged >= 0 && merged != transfer.operations) {
            // owner thread is the only writer
            mergeMismatches = mergeMismatches + 1;
            lastMergeMismatch = String.format(Locale.ROOT, "NIXL made %d descriptors of a transfer reported as %d operations", merged, transfer.operations);
        }
    }

    /**
     * Tells whether NIXL merged any transfer differently from the count the transport reported.
     *
     * @return the problem, or empty.
     */
    Optional<String> mergeProblem()
    {
        long mismatches = mergeMismatches;
        if (mismatches == 0) {
            return Optional.empty();
        }
        return Optional.of(String.format(Locale.ROOT, "%s: %d transfer(s) merged differently from the reported operation count (last: %s); "
                + "this NIXL merges descriptors by another rule than 1.4.0's, so operations() counts are estimates", guard.description(), mismatches,
                lastMergeMismatch));
    }

    /** @return the handles, which the backend's queries and releases go through. */
    TransferTable<NixlTransfer> table()
    {
        return table;
    }
}
