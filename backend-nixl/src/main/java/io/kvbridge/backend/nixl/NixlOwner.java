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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner loop of one {@code nixl} instance: the thread that opens the NIXL agent, runs the work
 * callers hand over and, between pieces of work, polls the running requests and NIXL's
 * notifications. It spins briefly when nothing happens, then parks: 20 µs between polls while
 * requests run; idle, 100 µs doubling to 10 ms while no notification arrives, since NIXL's C API
 * offers nothing to wait on.
 *
 * <p>NIXL's default agent takes no lock, so every native call is made under the agent lock: the
 * owner holds it for each round of its loop, and a poster that finds it free makes and posts its
 * request itself ({@link #tryEnter()}), as NIXL's own C probe posts from the thread that moves the
 * bytes, instead of handing the post over and waiting for the owner to wake and run it.
 *
 * <p>Threads: the agent and the stop flag are guarded by the agent lock; the poller and the
 * shutdown are set before the owner starts; {@code parked} and {@code posted} are what posters read
 * and write to wake the owner.
 */
final class NixlOwner
{
    private static final Logger LOG = LoggerFactory.getLogger(NixlOwner.class);
    // an idle owner spins this long before it parks: new work then starts without a wake-up
    private static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    private static final long POLL_INTERVAL_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    private static final long POST_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    // a poster tries this long for the agent lock, which the owner holds for a round of polls at most,
    // before it hands its post over instead
    private static final long ENTER_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(5);
    // an idle owner still polls NIXL for notifications (its C API has nothing to wait on): parks from
    // the shortest to the longest while nothing arrives, which bounds how late an idle instance sees one
    private static final long MIN_IDLE_WAIT_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
    private static final long MAX_IDLE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    // bounded, so a stream of calls never starves the polling of running requests
    private static final int WORK_PER_ROUND = 64;

    private final InstanceGuard guard;
    private final OwnerThread thread;
    // held by whichever thread calls into NIXL: the owner for each round, a poster for its post
    private final ReentrantLock agentLock = new ReentrantLock();
    private volatile boolean parked;
    // a poster made a request since the owner's last round: it must be polled, so the owner does not park long
    private volatile boolean posted;
    // posters spinning for the agent lock in tryEnter
    private final AtomicInteger entering = new AtomicInteger();

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
     * @param ucxConfig UCX settings for NIXL's UCX backend; empty for none.
     * @param transfers polled between pieces of work.
     * @param receive moves what NIXL received into the inbox, between pieces of work; true when anything arrived.
     * @param nativeShutdown releases everything native, the agent last; run when the loop ends with the agent open.
     * @throws KvBridgeException when the agent cannot be opened; the thread is stopped then.
     */
    void start(Path library, boolean progressThread, boolean telemetry, long progressDelayMicros, String ucxConfig, NixlTransfers transfers,
            BooleanSupplier receive, Runnable nativeShutdown)
    {
        this.poller = requireNonNull(transfers, "transfers is null");
        this.receiver = requireNonNull(receive, "receive is null");
        this.shutdown = requireNonNull(nativeShutdown, "nativeShutdown is null");
        thread.start();
        try {
            thread.call(() -> {
                agent = Nixl.openAgent(library, guard.agentName(), progressThread, telemetry, progressDelayMicros, ucxConfig, agentLock);
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
            long lockedOutSince = 0;
            while (true) {
                // a poster waits a few microseconds at most, then hands its post over, and holds the lock for one
                // post: the owner spins rather than block on the lock, which would park it until woken and allocate
                // a queue node, and polls between short parks once a post outlasts the spin (one that moves its bytes)
                if (entering.get() > 0 || !agentLock.tryLock()) {
                    long now = System.nanoTime();
                    if (lockedOutSince == 0) {
                        lockedOutSince = now;
                    }
                    if (now - lockedOutSince < SPIN_NANOS) {
                        Thread.onSpinWait();
                    }
                    else {
                        LockSupport.parkNanos(this, POLL_INTERVAL_NANOS);
                    }
                    continue;
                }
                lockedOutSince = 0;
                boolean progressed;
                boolean busy;
                try {
                    posted = false;
                    progressed = thread.runQueued(WORK_PER_ROUND) > 0;
                    if (stopRequested) {
                        break;
                    }
                    busy = poller.busy();
                    if (busy) {
                        progressed |= poller.pollRunning();
                    }
                    // the agent opens in the first piece of work, and closes in the last
                    if (agent != null) {
                        progressed |= receiver.getAsBoolean();
                    }
                }
                finally {
                    agentLock.unlock();
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
                if (!thread.hasQueued() && !posted) {
                    LockSupport.parkNanos(this, busy ? POLL_INTERVAL_NANOS : idleWait);
                    if (!busy) {
                        idleWait = Math.min(2 * idleWait, MAX_IDLE_WAIT_NANOS);
                    }
                }
                parked = false;
            }
        }
        finally {
            agentLock.lock();
            try {
                if (agent != null) {
                    shutdown.run();
                }
            }
            catch (RuntimeException e) {
                LOG.warn("closing the NIXL agent of {} failed", guard.description(), e);
            }
            finally {
                agentLock.unlock();
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
     * Returns the agent; under the agent lock only (the owner's work, or a poster that entered).
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

    /** Closes the agent, last step of the shutdown; owner thread only, under the agent lock. */
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
     * Takes the agent lock for a post made on the caller's thread, when the owner leaves it free
     * within a few microseconds. The caller then acts as the owner until {@link #exit(boolean)}: it may
     * call into NIXL and change what the owner's polls read, and nothing else.
     *
     * @return true when the lock is held; false to hand the post over with {@link #post(OwnerWork)}.
     */
    boolean tryEnter()
    {
        if (agentLock.tryLock()) {
            return true;
        }
        // the owner starts no round while a poster waits, so the lock comes free within a round
        entering.incrementAndGet();
        try {
            long start = System.nanoTime();
            do {
                Thread.onSpinWait();
                if (agentLock.tryLock()) {
                    return true;
                }
            }
            while (System.nanoTime() - start < ENTER_SPIN_NANOS);
            return false;
        }
        finally {
            entering.decrementAndGet();
        }
    }

    /**
     * Releases the agent lock after {@link #tryEnter()}, and wakes the owner when a request was
     * left running (one that ended inside its post, as NIXL's UCX backend ends a write over {@code
     * cma}, needs no poll, so the owner is not woken for it).
     *
     * @param running whether the caller left a request for the owner to poll.
     */
    void exit(boolean running)
    {
        agentLock.unlock();
        if (running) {
            // written before parked is read, as the owner writes parked before it reads posted: one of the two sees the other
            posted = true;
            wake();
        }
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

    /** Runs an action on the owner thread, waiting at most a timeout ({@link OwnerThread#call(Supplier, long, String)}). */
    <T> T call(Supplier<T> action, long timeoutNanos, String what)
    {
        return thread.call(action, timeoutNanos, what);
    }

    /** Asks the loop to end after the current piece of work; owner thread only, under the agent lock. */
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
