package io.kvbridge.transport;

import java.util.concurrent.locks.LockSupport;

/**
 * One piece of native work handed to a transport's owner thread, whose caller parks until it is
 * done. Transfer slots extend it, so posting allocates no work object.
 */
public abstract class OwnerWork
{
    /** How long {@link #await()} spins before it parks: most work takes less than parking and waking costs. */
    public static final long SPIN_NANOS = 20_000;

    private volatile boolean done;
    private volatile Thread waiter;
    // written by the owner before done is set, read by the waiter after it sees done
    private RuntimeException thrown;

    /** Runs on the owner thread. */
    protected abstract void runOnOwner();

    /** For transfer slots and other work an owner thread runs. */
    protected OwnerWork()
    {
    }

    /**
     * Readies the work for a new hand-over; the owner thread's caller calls it before queueing.
     *
     * @param caller the thread to wake when the work is done, or null when nobody waits.
     */
    public final void prepare(Thread caller)
    {
        thrown = null;
        done = false;
        waiter = caller;
    }

    /**
     * Called instead of {@link #runOnOwner()} when the owner thread stopped before it could run
     * this work, after the cause is recorded; a transfer handed over without waiting ends itself
     * here. The default does nothing.
     *
     * @param cause why the work never ran.
     */
    protected void abandoned(RuntimeException cause)
    {
    }

    /**
     * Records what the work threw, for its waiter; the owner thread calls it.
     *
     * @param cause the failure.
     */
    public final void fail(RuntimeException cause)
    {
        thrown = cause;
    }

    /**
     * Marks the work done and wakes its caller. Nothing of this object is touched after {@code done}
     * is set: a transfer slot may then be reused at once, with a new waiter, by its next post.
     */
    public final void complete()
    {
        Thread caller = waiter;
        done = true;
        if (caller != null) {
            LockSupport.unpark(caller);
        }
    }

    /**
     * Waits until the owner is done, keeping the interrupt flag; rethrows what the work threw. It
     * spins for {@link #SPIN_NANOS} first, yielding, so the owner gets the core if it shares this one.
     */
    public final void await()
    {
        await(SPIN_NANOS);
    }

    /**
     * Waits as {@link #await()} does, spinning longer or shorter first: for work known to take longer
     * than {@link #SPIN_NANOS} and to be waited for in a loop, where every park adds a wake-up.
     *
     * @param spinNanos how long to spin, yielding, before parking.
     */
    public final void await(long spinNanos)
    {
        awaitUntil(spinNanos, false, 0);
    }

    /**
     * Waits as {@link #await()} does, but no longer than until a deadline: for cold-path work whose
     * native call may never return (a library stuck in its own shutdown).
     *
     * @param deadlineNanos {@link System#nanoTime()} after which the caller stops waiting.
     * @return true when the work is done (what it threw is rethrown); false when the deadline passed
     *     first: the work may still run, so its caller must not hand it over again.
     */
    public final boolean awaitUntil(long deadlineNanos)
    {
        return awaitUntil(SPIN_NANOS, true, deadlineNanos);
    }

    private boolean awaitUntil(long spinNanos, boolean bounded, long deadlineNanos)
    {
        long spinUntil = System.nanoTime() + spinNanos;
        while (!done && System.nanoTime() < spinUntil) {
            Thread.yield();
        }
        boolean interrupted = false;
        while (!done) {
            if (bounded) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                LockSupport.parkNanos(this, left);
            }
            else {
                LockSupport.park(this);
            }
            if (Thread.interrupted()) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (!done) {
            return false;
        }
        if (thrown != null) {
            throw thrown;
        }
        return true;
    }
}
