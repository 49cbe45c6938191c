package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
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
 * <p>Every method that takes a peer or a prepared list from the caller first checks that this
 * instance made it ({@code FOREIGN_HANDLE} otherwise), then hands the transport its own type
 * through a {@code ...Checked} method, so no transport casts: {@link #disconnectChecked},
 * {@link #prepareRemoteChecked}, {@link #releaseChecked}, {@link #postChecked} and
 * {@link #notifyChecked}.
 *
 * <p>Threads: any; the parts lock for themselves.
 *
 * @param <P> the transport's peer class.
 * @param <L> the transport's prepared-list class.
 */
public abstract class AbstractTransferBackend<P extends TransportPeer, L extends OwnedPreparedList> implements TransferBackend
{
    /** The instance's identity, open/closed state and owner token. */
    protected final InstanceGuard guard;
    /** The lists the instance prepared and has not released; a transport adds each list it prepares. */
    protected final PreparedLists<L> lists;
    private final TransportTypes<P, L> types;
    private final TransferTable<?> transfers;
    private final Inbox inbox;
    private final WriteStop revokeStop;
    private final WriteStop releaseStop;

    /**
     * Creates the common part. A transport builds its parts before calling this (a constructor may
     * run statements before {@code super(...)} as long as they do not use {@code this}).
     *
     * @param guard the instance's guard.
     * @param types the transport's peer and list classes and its notification limit.
     * @param transfers its handles.
     * @param inbox its received notifications and the thread to wake.
     */
    protected AbstractTransferBackend(InstanceGuard guard, TransportTypes<P, L> types, TransferTable<?> transfers, Inbox inbox)
    {
        this(guard, types, transfers, inbox, WriteStop.AFTER_PROOF, WriteStop.AFTER_PROOF);
    }

    /**
     * Creates the common part of a transport that proves more than the SPI's defaults when a revoke
     * or a release returns.
     *
     * @param guard the instance's guard.
     * @param types the transport's peer and list classes and its notification limit.
     * @param transfers its handles.
     * @param inbox its received notifications and the thread to wake.
     * @param revokeStop what {@link #writeStopOnRevoke()} answers.
     * @param releaseStop what {@link #writeStopOnRelease()} answers.
     */
    protected AbstractTransferBackend(InstanceGuard guard, TransportTypes<P, L> types, TransferTable<?> transfers, Inbox inbox, WriteStop revokeStop,
            WriteStop releaseStop)
    {
        this.guard = requireNonNull(guard, "guard is null");
        this.types = requireNonNull(types, "types is null");
        this.lists = new PreparedLists<>(guard);
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
     * {@inheritDoc} Checks the peer is this instance's ({@code FOREIGN_HANDLE} otherwise), then
     * {@link #disconnectChecked}; a closed instance is the transport's to answer.
     */
    @Override
    public final void disconnect(Peer peer)
    {
        disconnectChecked(guard.own(peer, types.peer()));
    }

    /**
     * Disconnects one of this instance's peers.
     *
     * @param peer the peer, this instance's.
     */
    protected abstract void disconnectChecked(P peer);

    /**
     * {@inheritDoc} Checks the descriptors given, the peer this instance's
     * ({@code FOREIGN_HANDLE}) and the instance open ({@code CLOSED}), then
     * {@link #prepareRemoteChecked}.
     */
    @Override
    public final PreparedList prepareRemote(Peer peer, DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        P own = guard.own(peer, types.peer());
        guard.checkOpen();
        return prepareRemoteChecked(own, descriptors);
    }

    /**
     * Prepares descriptors of a peer's memory; the peer may have become unusable since it was
     * connected, which is the transport's to refuse.
     *
     * @param peer the peer, this instance's.
     * @param descriptors the peer's descriptors, given; untrusted.
     * @return the list, this instance's.
     */
    protected abstract L prepareRemoteChecked(P peer, DescriptorList descriptors);

    /** {@inheritDoc} Checks the list is this instance's ({@code FOREIGN_HANDLE}), then {@link #releaseChecked}. */
    @Override
    public final void releasePrepared(PreparedList list)
    {
        releaseChecked(guard.own(list, types.list()));
    }

    /**
     * Releases one of this instance's lists; idempotent. The default drops it from {@link #lists};
     * a transport holding native state per list overrides this.
     *
     * @param list the list, this instance's.
     */
    protected void releaseChecked(L list)
    {
        lists.release(list);
    }

    /**
     * {@inheritDoc} Makes the opening checks ({@link PostChecks#opening} with the transport's list
     * class and notification limit), then {@link #postChecked}.
     */
    @Override
    public final long post(TransferRequest request)
    {
        PostChecks.opening(guard, types.list(), request, types.maxNotificationBytes());
        return postChecked(request, types.list().cast(request.local()), types.list().cast(request.remote()));
    }

    /**
     * Posts a request that passed the opening checks; reads the request's parts and keeps none of
     * its arrays past the return.
     *
     * @param request the request.
     * @param local its local list, this instance's.
     * @param remote its remote list, this instance's.
     * @return the handle.
     */
    protected abstract long postChecked(TransferRequest request, L local, L remote);

    /**
     * {@inheritDoc} Checks the message given, the peer this instance's ({@code FOREIGN_HANDLE}),
     * the instance open ({@code CLOSED}) and the message within the transport's limit
     * ({@code INVALID_ARGUMENT}), then {@link #notifyChecked}.
     */
    @Override
    public final void notify(Peer peer, byte[] message)
    {
        requireNonNull(message, "message is null");
        P own = guard.own(peer, types.peer());
        guard.checkOpen();
        PostChecks.notification(message, types.maxNotificationBytes());
        notifyChecked(own, message);
    }

    /**
     * Sends a notification; the peer may have become unusable since it was connected, which is the
     * transport's to refuse.
     *
     * @param peer the peer, this instance's.
     * @param message the message, within the limit; the caller's array, to copy if kept.
     */
    protected abstract void notifyChecked(P peer, byte[] message);

    /**
     * Checks a list given to {@code grant} is this instance's, for a transport that checks grants.
     *
     * @param list from the caller; untrusted.
     * @return the list, typed.
     * @throws KvBridgeException {@code FOREIGN_HANDLE} for another instance's or transport's list.
     */
    protected final L ownList(PreparedList list)
    {
        return guard.own(list, types.list());
    }

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
