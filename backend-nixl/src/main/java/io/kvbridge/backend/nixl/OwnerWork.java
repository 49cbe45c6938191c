package io.kvbridge.backend.nixl;

import java.util.concurrent.locks.LockSupport;

/**
 * One piece of native work handed to a transport's owner thread, whose caller parks until it is
 * done. Transfer slots extend it, so posting allocates no work object.
 */
abstract class OwnerWork
{
    private static final long SPIN_NANOS = 20_000;

    private volatile boolean done;
    private volatile Thread waiter;
    // written by the owner before done is set, read by the waiter after it sees done
    private RuntimeException thrown;

    /** Runs on the owner thread. */
    abstract void runOnOwner();

    final void prepare(Thread caller)
    {
        thrown = null;
        done = false;
        waiter = caller;
    }

    final void fail(RuntimeException cause)
    {
        thrown = cause;
    }

    /**
     * Marks the work done and wakes its caller. Nothing of this object is touched after {@code done}
     * is set: a transfer slot may then be reused at once, with a new waiter, by its next post.
     */
    final void complete()
    {
        Thread caller = waiter;
        done = true;
        if (caller != null) {
            LockSupport.unpark(caller);
        }
    }

    /**
     * Waits until the owner is done, keeping the interrupt flag; rethrows what the work threw. It
     * spins briefly first: most work takes microseconds, less than parking and waking costs.
     */
    final void await()
    {
        long spinUntil = System.nanoTime() + SPIN_NANOS;
        while (!done && System.nanoTime() < spinUntil) {
            Thread.onSpinWait();
        }
        boolean interrupted = false;
        while (!done) {
            LockSupport.park(this);
            if (Thread.interrupted()) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (thrown != null) {
            throw thrown;
        }
    }
}
