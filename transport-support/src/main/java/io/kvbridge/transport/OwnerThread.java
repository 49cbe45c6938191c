package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one platform thread that makes every native call of a transport instance, and the queue other
 * threads hand it work through. A native library that takes no lock of its own (UCX's worker,
 * NIXL's default agent) is then only ever entered from one thread.
 *
 * <p>The transport supplies the loop: it runs until it decides to stop, calling {@link #runQueued}
 * each round, and releases its native state before it returns. When the loop ends, for whatever
 * reason, every piece of work still queued fails with {@code CLOSED} instead of waiting forever,
 * and {@link #problem()} reports the stop.
 *
 * <p>Callers either wait ({@link #execute}, {@link #call}) or hand work over and return
 * ({@link #submit}); hand-overs allocate nothing beyond the work object, which posts reuse.
 */
public final class OwnerThread
{
    private static final Logger LOG = LoggerFactory.getLogger(OwnerThread.class);

    private final String description;
    private final OwnerQueue queue;
    private final Runnable wake;
    private final Thread thread;
    private final Object terminationLock = new Object();
    private volatile boolean terminated;
    private volatile Throwable failure;

    /** A cold-path call, allocated per call. */
    private static final class Call<T> extends OwnerWork
    {
        private final Supplier<T> action;
        private T result;

        Call(Supplier<T> action)
        {
            this.action = action;
        }

        @Override
        protected void runOnOwner()
        {
            result = action.get();
        }
    }

    /**
     * Creates the thread, not yet started.
     *
     * @param threadName such as {@code kvbridge-ucx-agent}.
     * @param description names the instance in errors, such as {@code ucx transport 'agent'}.
     * @param capacity queued pieces of work at most: posts in flight plus waiting calls.
     * @param loop the transport's loop; it must call {@link #runQueued} each round and release
     *     native state before it returns.
     * @param wake wakes the loop when it sleeps, called after every hand-over; it must not block.
     */
    public OwnerThread(String threadName, String description, int capacity, Runnable loop, Runnable wake)
    {
        this.description = requireNonNull(description, "description is null");
        this.queue = new OwnerQueue(capacity);
        this.wake = requireNonNull(wake, "wake is null");
        requireNonNull(loop, "loop is null");
        this.thread = Thread.ofPlatform().daemon().name(requireNonNull(threadName, "threadName is null")).unstarted(() -> runLoop(loop));
    }

    /** Starts the thread. */
    public void start()
    {
        thread.start();
    }

    /** {@return the thread, for parking and unparking it} */
    public Thread thread()
    {
        return thread;
    }

    /** {@return true on the owner thread} */
    public boolean isOwner()
    {
        return Thread.currentThread() == thread;
    }

    /** {@return true once the loop has ended} */
    public boolean terminated()
    {
        return terminated;
    }

    private void runLoop(Runnable loop)
    {
        try {
            loop.run();
        }
        catch (RuntimeException | Error e) {
            failure = e;
            LOG.error("the owner thread of {} failed; the transport stops", description, e);
        }
        finally {
            synchronized (terminationLock) {
                terminated = true;
                failQueued();
            }
        }
    }

    /**
     * Runs queued work on the owner thread; work that throws fails its caller, not the loop.
     *
     * @param limit most pieces to run this round, so a stream of calls never starves the loop's polling.
     * @return how many ran.
     */
    public int runQueued(int limit)
    {
        int ran = 0;
        OwnerWork work;
        while (ran < limit && (work = queue.poll()) != null) {
            run(work);
            ran++;
        }
        return ran;
    }

    /** {@return true when work waits; for the owner, before it sleeps} */
    public boolean hasQueued()
    {
        return !queue.isEmpty();
    }

    private static void run(OwnerWork work)
    {
        try {
            work.runOnOwner();
        }
        catch (RuntimeException e) {
            work.fail(e);
        }
        catch (Error e) {
            work.fail(new KvBridgeException(ErrorCode.NATIVE_ERROR, "the owner thread failed: " + e, e));
            throw e;
        }
        finally {
            work.complete();
        }
    }

    /** Fails what is queued once the loop has ended; under the termination lock. */
    private void failQueued()
    {
        OwnerWork left;
        while ((left = queue.poll()) != null) {
            KvBridgeException cause = closedError();
            left.fail(cause);
            try {
                left.abandoned(cause);
            }
            finally {
                left.complete();
            }
        }
    }

    /**
     * Hands work over and waits until the owner has run it; rethrows what it threw. On the owner
     * thread itself the work runs at once.
     *
     * @param work prepared by nobody else right now; reusable once this returns.
     * @throws KvBridgeException {@code CLOSED} when the owner has stopped.
     */
    public void execute(OwnerWork work)
    {
        execute(work, OwnerWork.SPIN_NANOS);
    }

    /**
     * Hands work over and waits as {@link #execute(OwnerWork)} does, spinning for a given time
     * before the caller parks (see {@link OwnerWork#await(long)}).
     *
     * @param work prepared by nobody else right now; reusable once this returns.
     * @param spinNanos how long the caller spins, yielding, before it parks.
     * @throws KvBridgeException {@code CLOSED} when the owner has stopped.
     */
    public void execute(OwnerWork work, long spinNanos)
    {
        if (isOwner()) {
            work.prepare(null);
            run(work);
            work.await();
            return;
        }
        work.prepare(Thread.currentThread());
        handOver(work);
        work.await(spinNanos);
    }

    /**
     * Hands work over without waiting; its outcome reaches the transport through the work itself
     * ({@link OwnerWork#abandoned} when the owner stopped first).
     *
     * @param work not queued already.
     */
    public void submit(OwnerWork work)
    {
        work.prepare(null);
        handOver(work);
    }

    /**
     * Runs an action on the owner thread and waits for it, unless the owner has stopped: what an
     * owner held (connections, a worker) ended with it, so an action that ends part of it, such as
     * cutting off a peer a revoke outlasted, has nothing left to do then. For calls off the hot path.
     *
     * @param action what to run.
     * @return true when it ran, false when the owner had stopped.
     * @throws KvBridgeException what the action threw.
     */
    public boolean runUnlessStopped(Runnable action)
    {
        try {
            call(() -> {
                action.run();
                return null;
            });
            return true;
        }
        catch (KvBridgeException e) {
            if (e.code() != ErrorCode.CLOSED) {
                throw e;
            }
            return false;
        }
    }

    /**
     * Runs an action on the owner thread and returns its result; for calls off the hot path.
     *
     * @param <T> the result type.
     * @param action what to run.
     * @return its result.
     * @throws KvBridgeException what the action threw, or {@code CLOSED} when the owner has stopped.
     */
    public <T> T call(Supplier<T> action)
    {
        if (isOwner()) {
            return action.get();
        }
        Call<T> call = new Call<>(action);
        execute(call);
        return call.result;
    }

    /**
     * Runs an action on the owner thread as {@link #call(Supplier)} does, waiting no longer than a
     * timeout: for shutdown work whose native calls may never return. On the owner thread itself the
     * action runs at once, unbounded.
     *
     * @param <T> the result type.
     * @param action what to run.
     * @param timeoutNanos how long to wait for it.
     * @param what names the action in the error, such as {@code "the native shutdown"}.
     * @return its result.
     * @throws KvBridgeException {@code DEADLINE_EXCEEDED} naming where the owner thread is when it
     *     has not finished in time (the action may still finish later); what the action threw; or
     *     {@code CLOSED} when the owner has stopped.
     */
    public <T> T call(Supplier<T> action, long timeoutNanos, String what)
    {
        if (isOwner()) {
            return action.get();
        }
        Call<T> call = new Call<>(action);
        long deadline = System.nanoTime() + timeoutNanos;
        call.prepare(Thread.currentThread());
        handOver(call);
        if (!call.awaitUntil(deadline)) {
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, String.format(Locale.ROOT,
                    "%s: %s did not finish within %d ms; its owner thread %s is still in %s (a native call that has not returned); "
                            + "the instance is given up and what that call holds stays with the process",
                    description, what, TimeUnit.NANOSECONDS.toMillis(timeoutNanos), thread.getName(), whereOwnerIs()));
        }
        return call.result;
    }

    private String whereOwnerIs()
    {
        StackTraceElement[] stack = thread.getStackTrace();
        for (StackTraceElement frame : stack) {
            // the first frame of the project's own: the binding call that waits on the library
            if (frame.getClassName().startsWith("io.kvbridge.")) {
                return frame.toString();
            }
        }
        return stack.length > 0 ? stack[0].toString() : "no Java frame (state " + thread.getState() + ")";
    }

    private void handOver(OwnerWork work)
    {
        if (terminated) {
            throw closedError();
        }
        while (!queue.offer(work)) {
            // full: every slot of the queue holds work the owner has not reached yet
            wake.run();
            Thread.yield();
            if (terminated) {
                throw closedError();
            }
        }
        wake.run();
        if (terminated) {
            // the loop ended and drained: fail what was queued after its drain, this work included
            synchronized (terminationLock) {
                failQueued();
            }
        }
    }

    /**
     * Waits for the thread to end.
     *
     * @param millis how long at most.
     * @return true when it ended.
     */
    public boolean join(long millis)
    {
        if (isOwner()) {
            return false;
        }
        try {
            thread.join(millis);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            LOG.warn("the owner thread {} of {} did not stop within {} ms", thread.getName(), description, millis);
            return false;
        }
        return true;
    }

    /** Wakes the owner when it parks with {@link LockSupport}; a {@code wake} for loops that park. */
    public void unpark()
    {
        LockSupport.unpark(thread);
    }

    /**
     * Tells whether the owner stopped while its instance was meant to run.
     *
     * @return what stopped and what to do, or empty while the thread runs (or was never started).
     */
    public Optional<String> problem()
    {
        if (!terminated && (thread.isAlive() || thread.getState() == Thread.State.NEW)) {
            return Optional.empty();
        }
        Throwable cause = failure;
        return Optional.of("owner thread " + thread.getName() + " of " + description + " has stopped" + (cause == null ? "" : " after " + cause)
                + " (state=" + thread.getState() + "): no native call progresses, so every transfer and notification of this instance stalls;"
                + " close it and create a new one (the log has the stack trace)");
    }

    private KvBridgeException closedError()
    {
        return new KvBridgeException(ErrorCode.CLOSED, description + " is closed");
    }
}
