package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.nixl.ffm.Nixl;
import io.kvbridge.backend.nixl.ffm.NixlAgent;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnerThread;
import io.kvbridge.transport.OwnerWork;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner loop of one {@code nixl} instance: the one thread that opens the NIXL agent and makes
 * every native call (NIXL's default agent takes no lock), running the work callers hand over and,
 * between pieces of work, polling the running requests and NIXL's notifications. It spins briefly
 * when nothing happens, then parks: 20 µs between polls while requests run; idle, 100 µs doubling
 * to 10 ms while no notification arrives, since NIXL's C API offers nothing to wait on.
 *
 * <p>Threads: the agent, the stop flag, the poller and the shutdown belong to the owner thread
 * (the last two are set before it starts); {@code parked} is what producers read to wake it.
 */
final class NixlOwner
{
    private static final Logger LOG = LoggerFactory.getLogger(NixlOwner.class);
    // an idle owner spins this long before it parks: new work then starts without a wake-up
    private static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    private static final long POLL_INTERVAL_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    private static final long POST_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    // an idle owner still polls NIXL for notifications (its C API has nothing to wait on): parks from
    // the shortest to the longest while nothing arrives, which bounds how late an idle instance sees one
    private static final long MIN_IDLE_WAIT_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
    private static final long MAX_IDLE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    // bounded, so a stream of calls never starves the polling of running requests
    private static final int WORK_PER_ROUND = 64;

    private final InstanceGuard guard;
    private final OwnerThread thread;
    private volatile boolean parked;

    private NixlAgent agent;
    private boolean stopRequested;
    private NixlTransfers poller;
    private BooleanSupplier receiver;
    private Runnable shutdown;

    /**
     * Creates the loop, not yet started.
     *
     * @param guard the instance's guard.
     * @param capacity queued work at most: posts in flight plus waiting calls.
     */
    NixlOwner(InstanceGuard guard, int capacity)
    {
        this.guard = requireNonNull(guard, "guard is null");
        this.thread = new OwnerThread("kvbridge-nixl-" + guard.agentName(), guard.description(), capacity, this::loop, this::wake);
    }

    /**
     * Starts the thread and opens the agent on it.
     *
     * @param library the {@code libnixl_capi.so} to use.
     * @param progressThread whether NIXL runs its own progress thread.
     * @param telemetry whether NIXL records per-request telemetry.
     * @param progressDelayMicros the longest NIXL's progress thread waits for an event between polls.
     * @param transfers polled between pieces of work.
     * @param receive moves what NIXL received into the inbox, between pieces of work; true when anything arrived.
     * @param nativeShutdown releases everything native, the agent last; run when the loop ends with the agent open.
     * @throws KvBridgeException when the agent cannot be opened; the thread is stopped then.
     */
    void start(Path library, boolean progressThread, boolean telemetry, long progressDelayMicros, NixlTransfers transfers, BooleanSupplier receive,
            Runnable nativeShutdown)
    {
        this.poller = requireNonNull(transfers, "transfers is null");
        this.receiver = requireNonNull(receive, "receive is null");
        this.shutdown = requireNonNull(nativeShutdown, "nativeShutdown is null");
        thread.start();
        try {
            thread.call(() -> {
                agent = Nixl.openAgent(library, guard.agentName(), progressThread, telemetry, progressDelayMicros);
                return null;
            });
        }
        catch (RuntimeException e) {
            stop(TimeUnit.SECONDS.toMillis(5));
            throw e;
        }
    }

    private void loop()
    {
        try {
            long idleSince = 0;
            long idleWait = MIN_IDLE_WAIT_NANOS;
            while (!stopRequested) {
                boolean progressed = thread.runQueued(WORK_PER_ROUND) > 0;
                if (stopRequested) {
                    break;
                }
                boolean busy = poller.busy();
                if (busy) {
                    progressed |= poller.pollRunning();
                }
                // the agent opens in the first piece of work, and closes in the last
                if (agent != null) {
                    progressed |= receiver.getAsBoolean();
                }
                if (progressed) {
                    idleSince = 0;
                    idleWait = MIN_IDLE_WAIT_NANOS;
                    continue;
                }
                long now = System.nanoTime();
                if (idleSince == 0) {
                    idleSince = now;
                }
                if (now - idleSince < SPIN_NANOS) {
                    Thread.onSpinWait();
                    continue;
                }
                parked = true;
                if (!thread.hasQueued()) {
                    LockSupport.parkNanos(this, busy ? POLL_INTERVAL_NANOS : idleWait);
                    if (!busy) {
                        idleWait = Math.min(2 * idleWait, MAX_IDLE_WAIT_NANOS);
                    }
                }
                parked = false;
            }
        }
        finally {
            if (agent != null) {
                try {
                    shutdown.run();
                }
                catch (RuntimeException e) {
                    LOG.warn("closing the NIXL agent of {} failed", guard.description(), e);
                }
            }
        }
    }

    private void wake()
    {
        if (parked) {
            thread.unpark();
        }
    }

    /**
     * Returns the agent; owner thread only.
     *
     * @throws KvBridgeException {@code CLOSED} once the agent was closed.
     */
    NixlAgent agent()
    {
        NixlAgent open = agent;
        if (open == null) {
            throw guard.closedError();
        }
        return open;
    }

    /** Closes the agent, last step of the shutdown; owner thread only. */
    void closeAgent()
    {
        NixlAgent closing = agent;
        agent = null;
        if (closing != null) {
            closing.close();
        }
    }

    /** Hands work over and waits until the owner ran it. */
    void execute(OwnerWork work)
    {
        thread.execute(work);
    }

    /**
     * Hands a post over and waits until the owner made and posted its request, spinning longer
     * than for other work before parking: a post of 256 KiB over UCX's cma outlasted the usual 20 µs,
     * and a poster that parked also waited to be woken, every post, which held the bench's 256 KiB
     * stream to 0.59-0.62 x the NIXL C probe against 0.79-0.92 x (same runs).
     */
    void post(OwnerWork post)
    {
        thread.execute(post, POST_SPIN_NANOS);
    }

    /** Runs a cold-path action on the owner thread and returns its result. */
    <T> T call(Supplier<T> action)
    {
        return thread.call(action);
    }

    /** Asks the loop to end after the current piece of work; owner thread only. */
    void requestStop()
    {
        stopRequested = true;
    }

    /**
     * Ends the loop, running the native shutdown when the agent is still open, and waits for the thread.
     *
     * @param millis how long to wait at most.
     */
    void stop(long millis)
    {
        try {
            call(() -> {
                requestStop();
                return null;
            });
        }
        catch (KvBridgeException alreadyStopped) {
            // the loop has ended: nothing left to ask
        }
        thread.join(millis);
    }

    /** @return why the owner stopped while the instance was meant to run, if it did. */
    Optional<String> problem()
    {
        return thread.problem();
    }
}
