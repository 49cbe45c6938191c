package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.spi.transfer.WriteStop;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * The part of {@link TransferBackend} that is the same for every transport built on the toolkit:
 * names, handle queries and release through the {@link TransferTable}, notifications through the
 * {@link Inbox}, resource counts, the health problem and (for host memory) host copies. A transport adds what is its own:
 * registering memory, reaching peers, preparing lists, posting, notifying and closing.
 *
 * <p>Threads: any; the parts lock for themselves.
 */
public abstract class AbstractTransferBackend implements TransferBackend
{
    /** The instance's identity, open/closed state and owner token. */
    protected final InstanceGuard guard;
    private final TransferTable<?> transfers;
    private final Inbox inbox;
    private final WriteStop revokeStop;
    private final WriteStop releaseStop;

    /**
     * Creates the common part. A transport builds its parts before calling this (a constructor may
     * run statements before {@code super(...)} as long as they do not use {@code this}).
     *
     * @param guard the instance's guard.
     * @param transfers its handles.
     * @param inbox its received notifications and the thread to wake.
     */
    protected AbstractTransferBackend(InstanceGuard guard, TransferTable<?> transfers, Inbox inbox)
    {
        this(guard, transfers, inbox, WriteStop.AFTER_PROOF, WriteStop.AFTER_PROOF);
    }

    /**
     * Creates the common part of a transport that proves more than the SPI's defaults when a revoke
     * or a release returns.
     *
     * @param guard the instance's guard.
     * @param transfers its handles.
     * @param inbox its received notifications and the thread to wake.
     * @param revokeStop what {@link #writeStopOnRevoke()} answers.
     * @param releaseStop what {@link #writeStopOnRelease()} answers.
     */
    protected AbstractTransferBackend(InstanceGuard guard, TransferTable<?> transfers, Inbox inbox, WriteStop revokeStop, WriteStop releaseStop)
    {
        this.guard = requireNonNull(guard, "guard is null");
        this.transfers = requireNonNull(transfers, "transfers is null");
        this.inbox = requireNonNull(inbox, "inbox is null");
        this.revokeStop = requireNonNull(revokeStop, "revokeStop is null");
        this.releaseStop = requireNonNull(releaseStop, "releaseStop is null");
    }

    /** What the constructor was told; a transport whose answer depends on its options overrides this. */
    @Override
    public WriteStop writeStopOnRevoke()
    {
        return revokeStop;
    }

    /** What the constructor was told. */
    @Override
    public WriteStop writeStopOnRelease()
    {
        return releaseStop;
    }

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
        return transfers.status(handle);
    }

    @Override
    public Optional<KvBridgeException> failure(long handle)
    {
        return transfers.failure(handle);
    }

    /** The slot's own count ({@link TransferSlot#operations()}), or -1 where the library decides. */
    @Override
    public int operations(long handle)
    {
        return transfers.slot(handle).operations();
    }

    /**
     * Releases a handle; a running transfer is marked cancelled, the transport is told
     * ({@link #cancelRunning}), and it frees the slot when it ends the transfer
     * ({@link TransferTable#finish}).
     */
    @Override
    public void release(long handle)
    {
        if (transfers.release(handle)) {
            cancelRunning();
        }
    }

    /**
     * A handle was released while its transfer ran: the caller may reuse the transfer's memory as
     * soon as {@code release} returns, so a transport whose transfers do not look at their
     * cancellation before each byte must stop them here. The default does nothing, for transports
     * that check {@link TransferSlot#cancelled()} as they move data.
     */
    protected void cancelRunning()
    {
    }

    /**
     * {@inheritDoc} A toolkit transport opens with {@link PostChecks#opening}, then reads the
     * request's parts and keeps none of its arrays past the return.
     */
    @Override
    public abstract long post(TransferRequest request);

    /**
     * Copies host bytes into registered memory through {@link #hostCopies()}, on the caller's
     * thread; a transport whose registrations are not all host memory overrides this.
     */
    @Override
    public void copyFromHost(MemorySegment source, Allocation destination, long offset)
    {
        Registrations<?> registrations = hostCopies();
        if (registrations == null) {
            TransferBackend.super.copyFromHost(source, destination, offset);
            return;
        }
        guard.checkOpen();
        registrations.copyFromHost(source, destination, offset);
    }

    /** Copies registered bytes into host memory through {@link #hostCopies()}; as {@link #copyFromHost}. */
    @Override
    public void copyToHost(Allocation source, long offset, MemorySegment destination)
    {
        Registrations<?> registrations = hostCopies();
        if (registrations == null) {
            TransferBackend.super.copyToHost(source, offset, destination);
            return;
        }
        guard.checkOpen();
        registrations.copyToHost(source, offset, destination);
    }

    /**
     * Names the registrations {@link #copyFromHost} and {@link #copyToHost} copy through, for a
     * transport whose registered memory is all host memory the JVM addresses. The default, null,
     * keeps the SPI's refusal ({@code UNSUPPORTED}).
     *
     * @return the instance's registrations, or null.
     */
    protected Registrations<?> hostCopies()
    {
        return null;
    }

    @Override
    public int drainNotifications(NotificationSink sink)
    {
        return inbox.drain(sink);
    }

    @Override
    public boolean wakeOnProgress(Thread waiter)
    {
        return inbox.wakeOnProgress(waiter);
    }

    @Override
    public final BackendResources resources()
    {
        return held(transfers.unreleased());
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

    /**
     * Closes once: the first call runs {@link #closeInstance()}, then releases every handle (later
     * calls with one see {@code HANDLE_UNKNOWN}) and drops undrained notifications, waking the
     * waiter one last time so it learns from its next poll that everything is gone. Later calls do
     * nothing.
     */
    @Override
    public final void close()
    {
        if (guard.close()) {
            try {
                closeInstance();
            }
            finally {
                transfers.close();
                inbox.close();
            }
        }
    }

    /**
     * Stops the instance's threads and releases what only it holds (native state, registrations,
     * lists, peers); runs once, after the guard is closed, so every other method already refuses
     * work with {@code CLOSED}. Handles and notifications are the base class's to release after it.
     */
    protected abstract void closeInstance();

    @Override
    public String toString()
    {
        return getClass().getSimpleName() + "[" + guard.agentName() + "]";
    }
}
