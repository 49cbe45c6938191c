package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.spi.transfer.WriteStop;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The transfers a rank's worker posted and polls until they end or pass their deadline, and the
 * handles whose release failed and is retried ({@link RetainedHandles}). Worker thread only.
 *
 * <p>A transport whose release of a running transfer does not prove its bytes stopped
 * ({@link WriteStop#AFTER_PROOF}) is not asked to cancel: a transfer that passes its deadline or is
 * cancelled while still in progress <em>lingers</em>, its handle kept and polled until the transfer
 * ends, which is the proof; only then is it released ({@link Outcome#stopped}).
 */
final class InFlightTransfers
{
    /** What the rank does with a transfer that ended; its handle is released (or retained) by then. */
    interface Outcome
    {
        /** A transfer finished: the transport reported its bytes in place. */
        void done(Transfer transfer);

        /**
         * A transfer failed, passed its deadline, or was cancelled while it still ran.
         *
         * @param code {@link ErrorCode#TRANSFER_FAILED}, or {@link ErrorCode#DEADLINE_EXCEEDED} for a stalled transfer.
         * @param message what happened, with the values.
         */
        void failed(Transfer transfer, ErrorCode code, String message);

        /** A transfer failed, passed its deadline or was cancelled while it ran: its peer may be gone. */
        void peerMayBeGone(Transfer transfer);

        /** A transfer whose release failed earlier was released now. */
        void releasedLate(Transfer transfer);

        /**
         * A lingering transfer ended and was released: it moves no byte any more.
         *
         * @param done whether it ended {@code DONE} (its notification, if any, was delivered).
         */
        void stopped(Transfer transfer, boolean done);
    }

    private final List<Transfer> transfers = new ArrayList<>();
    // failed or cancelled while in progress on a transport whose release proves nothing: polled until they end
    private final List<Transfer> lingering = new ArrayList<>();
    private final boolean releaseStopsWrites;
    private final TransferBackend transport;
    private final TransferMetrics metrics;
    private final RetainedHandles retained;
    private final Duration transferTimeout;

    InFlightTransfers(String name, TransferBackend transport, TransferMetrics metrics, Duration transferTimeout)
    {
        this.transport = requireNonNull(transport, "transport is null");
        this.metrics = requireNonNull(metrics, "metrics is null");
        this.transferTimeout = requireNonNull(transferTimeout, "transferTimeout is null");
        this.retained = new RetainedHandles(name, transport);
        this.releaseStopsWrites = transport.writeStopOnRelease() == WriteStop.ON_RETURN;
    }

    void add(Transfer transfer)
    {
        transfers.add(transfer);
    }

    /** {@return the handles held: transfers in flight and lingering ones} */
    int size()
    {
        return transfers.size() + lingering.size();
    }

    boolean isEmpty()
    {
        return transfers.isEmpty();
    }

    /** Retries every release that failed; each transfer released now goes to {@code outcome}. */
    void retryReleases(Outcome outcome)
    {
        retained.retry(outcome);
    }

    /** {@return the handles whose release failed and is retried} */
    int retainedCount()
    {
        return retained.size();
    }

    /** {@return a health report of the retained handles, answered now} */
    HealthReport retainedReport(long now)
    {
        return retained.report(now);
    }

    /**
     * Polls every transfer once: a finished one is released and handed to {@code outcome}, as is one
     * still running past its deadline (which the release cancels).
     */
    void poll(long now, Outcome outcome)
    {
        pollLingering(outcome);
        for (int i = 0; i < transfers.size(); i++) {
            Transfer transfer = transfers.get(i);
            TransferStatus status;
            String failure = null;
            try {
                status = transport.status(transfer.handle);
                if (status == TransferStatus.FAILED) {
                    KvBridgeException cause = transport.failure(transfer.handle).orElse(null);
                    failure = cause != null ? cause.getMessage() : "the transport reported the transfer failed";
                }
            }
            catch (KvBridgeException e) {
                status = TransferStatus.FAILED;
                failure = e.getMessage();
            }
            if (status == TransferStatus.IN_PROGRESS && now - transfer.deadlineNanos < 0) {
                continue;
            }
            removeAt(i);
            i--;
            if (status == TransferStatus.DONE) {
                metrics.transferDone(now - transfer.postedNanos, transfer.postDurationNanos, transfer.bytes, transfer.descriptors, transfer.operations);
                retained.release(transfer);
                outcome.done(transfer);
            }
            else {
                metrics.transferFailed();
                outcome.peerMayBeGone(transfer);
                ErrorCode code = status == TransferStatus.FAILED ? ErrorCode.TRANSFER_FAILED : ErrorCode.DEADLINE_EXCEEDED;
                String message = status == TransferStatus.FAILED ? failure : stalled(transfer, now);
                if (status == TransferStatus.IN_PROGRESS && !releaseStopsWrites) {
                    linger(transfer);
                }
                else {
                    retained.release(transfer);
                }
                outcome.failed(transfer, code, message);
            }
        }
    }

    private String stalled(Transfer transfer, long now)
    {
        return "transfer stalled: still in progress " + TimeUnit.NANOSECONDS.toMillis(now - transfer.postedNanos) + " ms after it was posted (its limit: "
                + TimeUnit.NANOSECONDS.toMillis(transfer.deadlineNanos - transfer.postedNanos) + " ms, transferTimeout=" + transferTimeout
                + " or the producer's lease if shorter)";
    }

    /**
     * {@return the earliest deadline of the transfers in flight, or {@code none} when there is none}
     */
    long earliestDeadline(long none)
    {
        if (transfers.isEmpty()) {
            return none;
        }
        long earliest = transfers.getFirst().deadlineNanos;
        for (int i = 1; i < transfers.size(); i++) {
            long deadline = transfers.get(i).deadlineNanos;
            if (deadline - earliest < 0) {
                earliest = deadline;
            }
        }
        return earliest;
    }

    /**
     * Cancels every in-flight transfer of an owner: released, so no data moves after this, where
     * the transport proves it; left lingering until it ends where it does not.
     */
    void cancel(Object owner, Outcome outcome)
    {
        for (int i = 0; i < transfers.size(); i++) {
            Transfer transfer = transfers.get(i);
            if (transfer.owner == owner) {
                removeAt(i);
                i--;
                boolean running = inProgress(transfer);
                if (running) {
                    outcome.peerMayBeGone(transfer);
                }
                if (running && !releaseStopsWrites) {
                    linger(transfer);
                }
                else {
                    retained.release(transfer);
                }
            }
        }
    }

    private void linger(Transfer transfer)
    {
        transfer.lingering = true;
        lingering.add(transfer);
    }

    /** Releases each lingering transfer that ended; the transport forgetting a handle ends it too. */
    private void pollLingering(Outcome outcome)
    {
        for (int i = 0; i < lingering.size(); i++) {
            Transfer transfer = lingering.get(i);
            TransferStatus status;
            try {
                status = transport.status(transfer.handle);
            }
            catch (KvBridgeException e) {
                // HANDLE_UNKNOWN or CLOSED: the transport let go of the transfer, so nothing of it runs
                status = TransferStatus.FAILED;
            }
            if (status == TransferStatus.IN_PROGRESS) {
                continue;
            }
            lingering.set(i, lingering.getLast());
            lingering.removeLast();
            i--;
            retained.release(transfer);
            outcome.stopped(transfer, status == TransferStatus.DONE);
        }
    }

    /** {@return whether a transfer of {@code owner} lingers: failed or cancelled, but not yet proven to move no byte} */
    boolean lingers(Object owner)
    {
        for (int i = 0; i < lingering.size(); i++) {
            if (lingering.get(i).owner == owner) {
                return true;
            }
        }
        return false;
    }

    /** {@return the cache groups the lingering transfers of {@code owner} write, as a mask} */
    long groupsLingering(Object owner)
    {
        long groups = 0;
        for (int i = 0; i < lingering.size(); i++) {
            if (lingering.get(i).owner == owner) {
                groups |= lingering.get(i).groups;
            }
        }
        return groups;
    }

    /** {@return the transfers lingering} */
    int lingeringCount()
    {
        return lingering.size();
    }

    private boolean inProgress(Transfer transfer)
    {
        try {
            return transport.status(transfer.handle) == TransferStatus.IN_PROGRESS;
        }
        catch (KvBridgeException e) {
            return false;
        }
    }

    /** {@return whether a transfer of {@code owner} is in flight or its handle retained} */
    boolean holds(Object owner)
    {
        for (int i = 0; i < transfers.size(); i++) {
            if (transfers.get(i).owner == owner) {
                return true;
            }
        }
        return retained.holds(owner);
    }

    /** {@return the cache groups the in-flight transfers of {@code owner} write, as a mask} */
    long groupsWritten(Object owner)
    {
        long groups = 0;
        for (int i = 0; i < transfers.size(); i++) {
            Transfer transfer = transfers.get(i);
            if (transfer.owner == owner) {
                groups |= transfer.groups;
            }
        }
        return groups;
    }

    /**
     * Releases every transfer at shutdown, retrying failed releases a few times.
     *
     * @param outcome told of each transfer whose retried release succeeded.
     * @return the handles still retained, which the transport's close releases.
     */
    int releaseAll(Outcome outcome)
    {
        for (Transfer transfer : transfers) {
            retained.release(transfer);
        }
        transfers.clear();
        // closing: the caller deregisters the memory and closes the transport next, which ends them
        for (Transfer transfer : lingering) {
            retained.release(transfer);
        }
        lingering.clear();
        for (int attempt = 0; attempt < 3 && retained.size() > 0; attempt++) {
            retained.retry(outcome);
        }
        return retained.size();
    }

    private void removeAt(int i)
    {
        transfers.set(i, transfers.getLast());
        transfers.removeLast();
    }
}
