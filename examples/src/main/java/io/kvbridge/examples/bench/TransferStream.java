package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * Streams prepared blocks through one transport instance: {@code batch} consecutive blocks per
 * transfer (one descriptor each), up to {@code window} transfers in flight, timing each
 * {@code post()} call and each transfer from the call to the completion the poller saw, as
 * nixlbench separates post from transfer time. Every transfer has a deadline: one that is not
 * done in time is released (which cancels it) and fails the stream with
 * {@link ErrorCode#DEADLINE_EXCEEDED}, so a peer that stopped answering costs a bounded wait.
 * Between polls the poller yields while transfers are ending, then parks until the transport's
 * wake-up ({@link TransferBackend#wakeOnProgress}) where the transport has one.
 *
 * <p>The arrays are allocated once per stream; a pass allocates nothing per transfer.
 */
final class TransferStream
{
    /**
     * How long after the last completion the poller keeps yielding instead of parking: while small
     * transfers end every few microseconds, a park and its wake-up would cost more than they save.
     */
    static final long YIELD_NANOS = 100_000;
    /** The longest park: a wake-up from the transport ends it at once; this bounds the deadline checks. */
    static final long PARK_NANOS = 1_000_000;

    private final TransferBackend transport;
    private final TransferOp op;
    private final int window;
    private final int batch;
    private final int transfers;
    private final long timeoutNanos;
    private final byte[] grantKey;
    private final int[][] slotIndices;
    private final long[] slotHandles;
    private final int[] slotTransfers;
    private final long[] slotPosted;
    private final boolean[] busy;
    // refilled for every post: posting allocates nothing
    private final TransferRequest request = new TransferRequest();
    /** Per transfer of the last pass: the post() call, and post to completion, in nanoseconds. */
    private final long[] postNanos;
    private final long[] transferNanos;
    // what runs on the posting thread before each post and after each completion; null for nothing
    private BlockCheck check;

    /** Work done per transfer around the transport's own, timed with it: the bench's block digests. */
    interface BlockCheck
    {
        /**
         * Runs before a transfer is posted.
         *
         * @param transfer the transfer's index in the pass.
         */
        void posting(int transfer);

        /**
         * Runs once a transfer is DONE, before it counts as completed.
         *
         * @param transfer the transfer's index in the pass.
         */
        void done(int transfer);
    }

    /**
     * Sets a stream up.
     *
     * @param transport the posting instance.
     * @param op READ or WRITE.
     * @param blocks blocks in the prepared lists, a multiple of {@code batch}.
     * @param batch descriptors per transfer.
     * @param window transfers in flight.
     * @param timeoutNanos how long one transfer may take.
     * @param grantKey the key the peer granted the blocks under.
     */
    TransferStream(TransferBackend transport, TransferOp op, int blocks, int batch, int window, long timeoutNanos, byte[] grantKey)
    {
        this.transport = requireNonNull(transport, "transport is null");
        this.op = requireNonNull(op, "op is null");
        KvBridgeException.checkArgument(batch > 0 && blocks % batch == 0, "batch=%d must be positive and divide blocks=%d", batch, blocks);
        KvBridgeException.checkArgument(window > 0, "window=%d is not positive", window);
        this.window = window;
        this.batch = batch;
        this.transfers = blocks / batch;
        this.timeoutNanos = timeoutNanos;
        this.grantKey = grantKey.clone();
        this.slotIndices = new int[window][batch];
        this.slotHandles = new long[window];
        this.slotTransfers = new int[window];
        this.slotPosted = new long[window];
        this.busy = new boolean[window];
        this.postNanos = new long[transfers];
        this.transferNanos = new long[transfers];
    }

    /**
     * Sets what runs around every transfer of the next passes.
     *
     * @param blockCheck the work, or null for none.
     */
    void check(BlockCheck blockCheck)
    {
        this.check = blockCheck;
    }

    /** {@return transfers per pass} */
    int transfers()
    {
        return transfers;
    }

    /**
     * Moves every block once.
     *
     * @param local the posting side's blocks.
     * @param remote the peer's blocks, paired by index.
     * @return nanoseconds from the first post to the last completion.
     */
    long pass(PreparedList local, PreparedList remote)
    {
        int posted = 0;
        int completed = 0;
        long start = System.nanoTime();
        // as an engine's worker does, the poller parks on the transport's wake-ups where it has them: a poller that
        // only yields keeps taking a core from the owner and copy threads that move the data
        boolean parks = transport.wakeOnProgress(Thread.currentThread());
        long lastProgress = start;
        try {
            while (completed < transfers) {
                for (int slot = 0; slot < window && posted < transfers; slot++) {
                    if (!busy[slot]) {
                        int[] indices = slotIndices[slot];
                        for (int i = 0; i < batch; i++) {
                            indices[i] = posted * batch + i;
                        }
                        slotTransfers[slot] = posted;
                        long before = System.nanoTime();
                        if (check != null) {
                            check.posting(posted);
                        }
                        slotHandles[slot] = transport.post(request.start(op).local(local, indices).remote(remote, indices).count(batch)
                                .grantKey(grantKey));
                        long after = System.nanoTime();
                        postNanos[posted] = after - before;
                        slotPosted[slot] = before;
                        busy[slot] = true;
                        posted++;
                    }
                }
                int completedBefore = completed;
                for (int slot = 0; slot < window; slot++) {
                    if (busy[slot]) {
                        TransferStatus status = transport.status(slotHandles[slot]);
                        long now = System.nanoTime();
                        if (status.terminal()) {
                            transferNanos[slotTransfers[slot]] = now - slotPosted[slot];
                            busy[slot] = false;
                            KvBridgeException cause = status == TransferStatus.DONE ? null : transport.failure(slotHandles[slot]).orElse(null);
                            transport.release(slotHandles[slot]);
                            if (status != TransferStatus.DONE) {
                                throw new KvBridgeException(cause == null ? ErrorCode.TRANSFER_FAILED : cause.code(), String.format(Locale.ROOT,
                                        "%s transfer %d of %d (%d descriptors) failed: %s", op, slotTransfers[slot], transfers, batch,
                                        cause == null ? status : cause.getMessage()), cause);
                            }
                            if (check != null) {
                                check.done(slotTransfers[slot]);
                            }
                            completed++;
                            lastProgress = now;
                        }
                        else if (now - slotPosted[slot] > timeoutNanos) {
                            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, String.format(Locale.ROOT,
                                    "%s transfer %d of %d (%d descriptors) not done after %d ms (is the peer stopped? --timeout bounds each transfer)",
                                    op, slotTransfers[slot], transfers, batch, timeoutNanos / 1_000_000));
                        }
                    }
                }
                if (completed == completedBefore) {
                    if (parks && System.nanoTime() - lastProgress > YIELD_NANOS) {
                        LockSupport.parkNanos(PARK_NANOS);
                    }
                    else {
                        // without wake-ups a timed park ends no sooner than the kernel's timer slack (50 us by default), which
                        // would be what a small block measures; yielding gives the core to a thread that needs it and otherwise
                        // polls again at once
                        Thread.yield();
                    }
                }
            }
            return System.nanoTime() - start;
        }
        finally {
            if (parks) {
                transport.wakeOnProgress(null);
            }
            releaseRunning();
        }
    }

    /** Releases (and so cancels) whatever a failed pass left in flight. */
    private void releaseRunning()
    {
        for (int slot = 0; slot < window; slot++) {
            if (busy[slot]) {
                busy[slot] = false;
                try {
                    transport.release(slotHandles[slot]);
                }
                catch (KvBridgeException e) {
                    // the pass already failed; its own error is the one to report
                }
            }
        }
    }

    /** {@return the post() times of the last pass, sorted} */
    long[] sortedPostNanos()
    {
        long[] sorted = postNanos.clone();
        Arrays.sort(sorted);
        return sorted;
    }

    /** {@return the post-to-completion times of the last pass, sorted} */
    long[] sortedTransferNanos()
    {
        long[] sorted = transferNanos.clone();
        Arrays.sort(sorted);
        return sorted;
    }

    /**
     * {@return a percentile of sorted values}
     *
     * @param sorted ascending values, not empty.
     * @param fraction 0.5 for the median.
     */
    static long percentile(long[] sorted, double fraction)
    {
        return sorted[Math.min(sorted.length - 1, Math.max(0, (int) Math.ceil(fraction * sorted.length) - 1))];
    }
}
