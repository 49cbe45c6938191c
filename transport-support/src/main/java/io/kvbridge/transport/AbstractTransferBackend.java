package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferStatus;
import java.util.Optional;

/**
 * The part of {@link TransferBackend} that is the same for every transport built on the toolkit:
 * names, handle queries and release through the {@link TransferTable}, notifications through the
 * {@link Inbox}, resource counts and the health problem. A transport adds what is its own:
 * registering memory, reaching peers, preparing lists, posting, notifying and closing.
 *
 * <p>Threads: any; the parts lock for themselves.
 */
public abstract class AbstractTransferBackend implements TransferBackend
{
    /** The instance's identity, open/closed state and owner token. */
    protected final InstanceGuard guard;

    /**
     * Creates the common part.
     *
     * @param guard the instance's guard.
     */
    protected AbstractTransferBackend(InstanceGuard guard)
    {
        this.guard = requireNonNull(guard, "guard is null");
    }

    /**
     * Returns the instance's handles; called only once construction is done.
     *
     * @return the table.
     */
    protected abstract TransferTable<?> transferTable();

    /**
     * Returns the instance's received notifications and the thread to wake; called only once
     * construction is done.
     *
     * @return the inbox.
     */
    protected abstract Inbox inbox();

    @Override
    public final String name()
    {
        return guard.transport();
    }

    @Override
    public final String agentName()
    {
        return guard.agentName();
    }

    @Override
    public TransferStatus status(long handle)
    {
        return transferTable().status(handle);
    }

    @Override
    public Optional<KvBridgeException> failure(long handle)
    {
        return transferTable().failure(handle);
    }

    /** The slot's own count ({@link TransferSlot#operations()}), or -1 where the library decides. */
    @Override
    public int operations(long handle)
    {
        return transferTable().slot(handle).operations();
    }

    /**
     * Releases a handle; a running transfer is marked cancelled, and the transport frees its slot
     * when it ends it ({@link TransferTable#finish}).
     */
    @Override
    public void release(long handle)
    {
        transferTable().release(handle);
    }

    @Override
    public int drainNotifications(NotificationSink sink)
    {
        return inbox().drain(sink);
    }

    @Override
    public boolean wakeOnProgress(Thread waiter)
    {
        return inbox().wakeOnProgress(waiter);
    }

    @Override
    public final BackendResources resources()
    {
        return held(transferTable().unreleased());
    }

    /**
     * Counts what the instance holds besides its handles: registrations, prepared lists, peers.
     *
     * @param transfers handles posted and not released, from the table.
     * @return the counts.
     */
    protected abstract BackendResources held(int transfers);

    @Override
    public final Optional<String> problem()
    {
        Optional<String> closed = guard.closedProblem();
        return closed.isPresent() ? closed : workerProblem();
    }

    /**
     * Tells why the instance's own threads can no longer work (an owner or copy thread that
     * stopped); never blocks or throws.
     *
     * @return the problem, or empty.
     */
    protected abstract Optional<String> workerProblem();

    /** Closes once: the first call runs {@link #closeInstance()}, later calls do nothing. */
    @Override
    public final void close()
    {
        if (guard.close()) {
            closeInstance();
        }
    }

    /**
     * Releases everything the instance holds and stops its threads; runs once, after the guard is
     * closed, so every other method already refuses work with {@code CLOSED}.
     */
    protected abstract void closeInstance();

    @Override
    public String toString()
    {
        return getClass().getSimpleName() + "[" + guard.agentName() + "]";
    }
}
