package io.kvbridge.transport;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferStatus;

/**
 * One reusable entry of a {@link TransferTable}: a posted transfer's status, failure and
 * cancellation, addressed by a handle that encodes the slot and its generation. Transports extend
 * it with their own per-transfer state (resolved copies, native requests) and keep it for the next
 * post, so posting allocates no transfer object.
 *
 * <p>A slot is also {@link OwnerWork}, so a transport with an owner thread can hand a post over
 * without allocating; others never use that side.
 *
 * <p>Threads: {@code generation}, {@code released} and {@code occupied} belong to the table's lock;
 * status, failure and cancellation are volatile and written by whichever thread ends the transfer,
 * through {@link TransferTable#finish}.
 */
public abstract class TransferSlot extends OwnerWork
{
    private final int index;

    // under the table's lock
    int generation;
    boolean released = true;
    boolean occupied;

    private volatile TransferStatus status = TransferStatus.DONE;
    private volatile KvBridgeException failure;
    private volatile boolean cancelled;

    /**
     * Creates a slot.
     *
     * @param index its position in the table, from the table's slot factory.
     */
    protected TransferSlot(int index)
    {
        this.index = index;
    }

    /** {@return the slot's position in its table} */
    public final int index()
    {
        return index;
    }

    /** {@return the handle of the transfer the slot holds now: generation in the high half, index in the low} */
    public final long handle()
    {
        return ((long) generation << 32) | index;
    }

    /** {@return the transfer's status} */
    public final TransferStatus status()
    {
        return status;
    }

    /** {@return why the transfer failed, or null} */
    public final KvBridgeException failure()
    {
        return failure;
    }

    /** {@return true once the handle was released (or the table closed) while the transfer ran: stop it at the next chance} */
    public final boolean cancelled()
    {
        return cancelled;
    }

    final void begin()
    {
        failure = null;
        cancelled = false;
        status = TransferStatus.IN_PROGRESS;
    }

    final void cancel()
    {
        cancelled = true;
    }

    final void end(KvBridgeException cause)
    {
        failure = cause;
        status = cause == null ? TransferStatus.DONE : TransferStatus.FAILED;
    }

    /**
     * Returns how many operations the transfer issues, for
     * {@link io.kvbridge.spi.transfer.TransferBackend#operations}: the coalesced copy count where
     * the transport decides it.
     *
     * @return the count, or -1 where a library decides for itself; the default.
     */
    protected int operations()
    {
        return -1;
    }

    /**
     * Drops what the slot refers to (lists, peers, notification bytes) so a finished transfer keeps
     * nothing alive. Called under the table's lock when the transfer ends and when the slot is reused.
     */
    protected abstract void clearReferences();

    /** A slot is handed to an owner thread only by transports that override this. */
    @Override
    protected void runOnOwner()
    {
        throw new UnsupportedOperationException(getClass().getName() + " is not owner work");
    }
}
