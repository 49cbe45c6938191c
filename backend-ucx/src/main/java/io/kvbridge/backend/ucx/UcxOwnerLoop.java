package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpWorker;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.OwnerThread;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner thread's loop: it opens the worker, then in each round progresses it, receives
 * messages, runs what other threads handed over (posts and calls, in the order they came, so a
 * {@code deregister()} or {@code disconnect()} that follows a post finds the transfer issued and
 * waits for it), and moves transfers, sends, endpoints and setups along. It polls while work is in
 * flight (a peer's emulated RMA needs this side to progress), yielding the core between polls,
 * keeps polling for {@code idle-spin-us} after the last event, then sleeps on the worker's event descriptor and the
 * eventfd that a hand-over signals. Work that waits 5 ms without any event (a stopped or
 * unresponsive peer) is waited for in sleeps on the same descriptors, 1 ms growing to 128 ms on an
 * armed worker (32 ms on one UCX could not arm), so a stuck peer costs no core; until that work
 * ends, an event is followed by the short idle spin only, since the next one is as likely to be a
 * heartbeat as the peer's answer. The same sleeps serve a worker that UCX cannot arm although it has
 * found nothing to do for 5 ms: UCX 1.13 keeps an endpoint to a process killed while its
 * shared-memory FIFO was full queued for discarding until the worker is destroyed (its flush
 * waits for FIFO room the dead process never makes), and while it is queued every arm fails, so
 * sleeping only on an armed worker would poll a core for the rest of the instance's life. When
 * asked to stop it runs {@link UcxShutdown}.
 *
 * <p>Threads: {@link #wake()} and {@link #requestStop()} are for any thread; the rest runs on the
 * owner thread, apart from {@link #awaitStart} on the constructing thread.
 */
final class UcxOwnerLoop
{
    private static final Logger LOG = LoggerFactory.getLogger(UcxOwnerLoop.class);

    private static final int PROGRESS_BURST = 32;
    private static final int SLEEP_MILLIS = 100;
    // the longest sleep while work waits for a peer that stopped answering and UCX could not arm
    // the worker: bounds how late progress without a wake-up event is noticed, at a few dozen
    // wake-ups a second
    private static final int WAIT_SLEEP_MILLIS = 32;
    // the same on an armed worker, whose events and hand-overs end the sleep: this only paces the
    // transfers' deadlines and UCX's keepalive, which runs inside progress
    private static final int ARMED_WAIT_SLEEP_MILLIS = 128;
    // how long work may wait without any event before the loop stops spinning for it
    private static final long WAIT_SPIN_NANOS = 5_000_000;
    // hand-overs run per round at most, so a stream of calls never starves polling
    private static final int QUEUED_PER_ROUND = 1024;
    // calls waiting besides the posts max-in-flight allows
    private static final int WAITING_CALLS = 1024;
    private static final int MAX_QUEUED_POSTS = 1 << 16;
    // opening a context and worker takes milliseconds; this only bounds a hung library
    private static final long START_TIMEOUT_MILLIS = 60_000;

    private final String description;
    private final UcxOptions options;
    private final UcxWorker worker;
    private final OwnerThread owner;
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private volatile boolean stopRequested;
    private volatile boolean sleeping;

    // set before the thread starts, owner thread afterwards
    private UcxTransfers transfers;
    private UcxMessaging messaging;
    private UcxEndpoints endpoints;
    private UcxShutdown shutdown;
    private UcxActiveMessages activeMessages;

    UcxOwnerLoop(String agentName, String description, UcxOptions options, UcxWorker worker)
    {
        this.description = description;
        this.options = options;
        this.worker = worker;
        int capacity = Math.min(options.maxInFlight(), MAX_QUEUED_POSTS) + WAITING_CALLS;
        this.owner = new OwnerThread("kvbridge-ucx-" + agentName, description, capacity, this::run, this::wake);
    }

    OwnerThread owner()
    {
        return owner;
    }

    /** Starts the thread with what its rounds move along. */
    void start(UcxTransfers transfers, UcxMessaging messaging, UcxEndpoints endpoints, UcxActiveMessages activeMessages, UcxShutdown shutdown)
    {
        this.activeMessages = activeMessages;
        this.transfers = transfers;
        this.messaging = messaging;
        this.endpoints = endpoints;
        this.shutdown = shutdown;
        owner.start();
    }

    /** Waits until the worker is open; rethrows why it could not open. */
    void awaitStart()
    {
        try {
            started.get(START_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        }
        catch (ExecutionException e) {
            throw e.getCause() instanceof KvBridgeException failure ? failure
                    : new KvBridgeException(ErrorCode.NATIVE_ERROR, description + " failed to start: " + e.getCause(), e.getCause());
        }
        catch (TimeoutException e) {
            throw new KvBridgeException(ErrorCode.NATIVE_ERROR, description + " did not start within " + START_TIMEOUT_MILLIS
                    + " ms: UCX did not finish creating its context and worker");
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KvBridgeException(ErrorCode.CLOSED, "interrupted while " + description + " was starting");
        }
    }

    /** Wakes the loop when it sleeps; called after every hand-over, so it must not block. */
    void wake()
    {
        if (sleeping) {
            worker.signal();
        }
    }

    /** Ends the loop at its next round, which then shuts the instance down. */
    void requestStop()
    {
        stopRequested = true;
        worker.signal();
    }

    private void run()
    {
        try {
            worker.open();
            if (activeMessages != null) {
                activeMessages.open(transfers);
            }
        }
        catch (RuntimeException | Error e) {
            worker.release();
            started.completeExceptionally(e);
            return;
        }
        started.complete(null);
        try {
            rounds();
        }
        finally {
            try {
                shutdown.run();
            }
            catch (RuntimeException | Error e) {
                LOG.error("{} failed to shut down cleanly", description, e);
            }
        }
    }

    private void rounds()
    {
        long spinNanos = TimeUnit.MICROSECONDS.toNanos(options.idleSpinMicros());
        long lastEvent = System.nanoTime();
        int waitMillis = 0;
        int rounds = 0;
        // UCX refused to arm the worker since the last event, although progress found nothing to do
        boolean unarmable = false;
        // work has waited WAIT_SPIN_NANOS without an event (a stopped peer) and still waits: the events
        // that trickle in meanwhile (a heartbeat handed over, a keepalive) are followed by the short
        // idle spin, not by another 5 ms of polling each
        boolean stalled = false;
        while (!stopRequested) {
            if (transfers.busy() && (++rounds & 1023) == 0) {
                transfers.checkDeadlines();
            }
            boolean busy = progressWhileBusy();
            busy |= messaging.receive();
            busy |= owner.runQueued(QUEUED_PER_ROUND) > 0;
            if (activeMessages != null) {
                busy |= activeMessages.advance();
            }
            busy |= transfers.advance();
            busy |= messaging.advanceSends();
            busy |= endpoints.advanceRetiring();
            busy |= endpoints.advanceSetups();
            long now = System.nanoTime();
            if (busy) {
                lastEvent = now;
                waitMillis = 0;
                unarmable = false;
                continue;
            }
            boolean waiting = transfers.busy() || messaging.busy() || endpoints.busy() || (activeMessages != null && activeMessages.busy());
            stalled &= waiting;
            if (waiting || unarmable) {
                if (now - lastEvent < (stalled ? spinNanos : WAIT_SPIN_NANOS)) {
                    // waiting for UCX: keep progressing (a peer's answer usually follows within microseconds),
                    // but yield rather than pause: the thread that answers (the target's owner, or an
                    // engine thread) may need this core, and a pausing poller keeps it until the
                    // scheduler preempts it, milliseconds later; on two busy cores that made a 32 KiB
                    // granted WRITE 50 times slower
                    Thread.yield();
                    continue;
                }
                // nothing moved for milliseconds although work waits (the peer is stopped or slow), or
                // although UCX says it has events (it holds work it cannot move): sleep, ever longer,
                // so that waiting costs no core
                waitMillis = Math.min(Math.max(1, waitMillis * 2), unarmable ? WAIT_SLEEP_MILLIS : ARMED_WAIT_SLEEP_MILLIS);
                stalled = waiting;
                transfers.checkDeadlines();
                unarmable = !sleep(waitMillis, true);
                continue;
            }
            if (now - lastEvent < spinNanos) {
                Thread.yield();
                continue;
            }
            if (sleep(SLEEP_MILLIS, false)) {
                lastEvent = System.nanoTime();
            }
            else {
                // UCX has events pending: progress again, and sleep as above if that finds nothing
                unarmable = true;
            }
        }
    }

    /**
     * Progresses the worker until it reports no more events (at most a few dozen times): while data
     * streams, UCX then moves it back to back instead of between rounds of bookkeeping. A handler
     * that leaves an answer to send ends the burst, so the answer leaves at once.
     */
    private boolean progressWhileBusy()
    {
        for (int round = 0; round < PROGRESS_BURST; round++) {
            if (UcpWorker.workerProgress(worker.worker()) == 0) {
                return round > 0;
            }
            if (activeMessages != null && activeMessages.answersDue()) {
                return true;
            }
        }
        return true;
    }

    /** @return false when UCX could not arm the worker (see {@link UcxWorker#await}). */
    private boolean sleep(int millis, boolean evenIfPending)
    {
        sleeping = true;
        try {
            // checked after sleeping is set: a hand-over either sees the flag and signals, or is seen here
            if (owner.hasQueued() || stopRequested) {
                return true;
            }
            return worker.await(millis, evenIfPending);
        }
        finally {
            sleeping = false;
        }
    }
}
