package io.kvbridge.backend.nixl;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.transport.AbstractTransferBackend;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.Registrations;
import io.kvbridge.transport.TransportTypes;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The NIXL transport: one NIXL agent with a UCX backend per instance, driven through NIXL's C API
 * on one owner thread ({@link NixlOwner}). This class only wires the parts together: memory
 * ({@link NixlMemoryRegistry}), peers and metadata ({@link NixlPeers}), prepared lists
 * ({@link NixlLists}), transfers ({@link NixlTransfers}), notifications ({@link NixlMessaging}) and
 * the native shutdown ({@link NixlShutdown}).
 *
 * <p><b>Checks.</b> Indices, lengths and descriptor ranges are checked against Java copies of the
 * prepared nixlLists, registrations and the peer's announced allocations before NIXL sees them, so bad
 * input gets a precise error and NIXL never sees an out-of-range index.
 *
 * <p><b>Operations.</b> NIXL merges a request's index runs into fewer descriptors itself; the
 * transport computes the same count when the post is checked ({@link StrideRuns}), reports it
 * through {@link #operations} and declares {@link io.kvbridge.spi.transfer.Capability#COALESCING}.
 * With the {@code telemetry} option NIXL's own count is read back after each transfer, and any
 * difference is reported by {@link #problem()}.
 *
 * <p>Threads: any; every part states its own.
 */
final class NixlTransferBackend extends AbstractTransferBackend<NixlPeer, NixlPreparedList>
{
    private final NixlOwner owner;
    private final NixlMemoryRegistry memory;
    private final NixlPeers peers;
    private final NixlLists nixlLists;
    private final NixlTransfers transfers;
    private final NixlMessaging messaging;
    private final NixlShutdown shutdown;
    private final long closeTimeoutNanos;

    /**
     * Starts the owner thread and opens the NIXL agent on it.
     *
     * @param library the {@code libnixl_capi.so} to use.
     * @param agentName the agent name, unique among peers.
     * @param progressThread whether NIXL runs its own progress thread.
     * @param telemetry whether NIXL records telemetry, against which each transfer's operation count is checked.
     * @param maxInFlight most posted transfers whose handles are not released.
     * @param progressDelayMicros the longest NIXL's progress thread waits for an event between polls.
     * @param ucxConfig UCX settings for NIXL's UCX backend ({@link NixlUcxSettings}); empty for none.
     * @param closeTimeoutMillis how long {@code close()} waits for NIXL's own shutdown before it gives the instance up.
     */
    NixlTransferBackend(Path library, String agentName, boolean progressThread, boolean telemetry, int maxInFlight, long progressDelayMicros,
            String ucxConfig, long closeTimeoutMillis)
    {
        InstanceGuard guard = new InstanceGuard(NixlBackendFactory.NAME, agentName);
        NixlOwner nixlOwner = new NixlOwner(guard, maxInFlight + 1024);
        Inbox notifications = new Inbox();
        NixlTransfers nixlTransfers = new NixlTransfers(guard, nixlOwner, maxInFlight, telemetry, notifications::wake);
        super(guard, new TransportTypes<>(NixlPeer.class, NixlPreparedList.class, NixlTransfers.MAX_NOTIFICATION_BYTES), nixlTransfers.table(),
                notifications);
        owner = nixlOwner;
        transfers = nixlTransfers;
        Registrations<NixlRegistration> registrations = new Registrations<>(guard.description());
        nixlLists = new NixlLists(guard, owner, registrations, lists);
        memory = new NixlMemoryRegistry(guard, owner, registrations, transfers, nixlLists);
        peers = new NixlPeers(guard, owner, memory, transfers, nixlLists);
        messaging = new NixlMessaging(guard, owner, peers, notifications);
        closeTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(closeTimeoutMillis);
        shutdown = new NixlShutdown(owner, transfers, nixlLists, peers, memory, closeTimeoutNanos);
        try {
            owner.start(library, progressThread, telemetry, progressDelayMicros, ucxConfig, transfers, messaging::receive, shutdown);
        }
        catch (RuntimeException e) {
            guard.close();
            throw e;
        }
    }

    @Override
    public void register(Allocation allocation)
    {
        memory.register(allocation);
    }

    @Override
    public void deregister(Allocation allocation)
    {
        memory.deregister(allocation);
    }

    @Override
    public byte[] localMetadata()
    {
        return peers.localMetadata();
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        return peers.connect(peerMetadata);
    }

    @Override
    protected void disconnectChecked(NixlPeer peer)
    {
        peers.disconnect(peer);
    }

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        return nixlLists.prepareLocal(descriptors);
    }

    @Override
    protected NixlPreparedList prepareRemoteChecked(NixlPeer peer, DescriptorList descriptors)
    {
        return nixlLists.prepareRemote(peer, descriptors);
    }

    @Override
    protected void releaseChecked(NixlPreparedList list)
    {
        nixlLists.release(list);
    }

    @Override
    protected long postChecked(TransferRequest request, NixlPreparedList local, NixlPreparedList remote)
    {
        // NIXL's peers do not check grants: the key is not sent
        return transfers.post(request, local, remote);
    }

    @Override
    protected void notifyChecked(NixlPeer peer, byte[] message)
    {
        messaging.notify(peer, message);
    }

    @Override
    protected BackendResources held(int transfers)
    {
        return new BackendResources(memory.size(), nixlLists.size(), peers.size(), transfers);
    }

    @Override
    protected Optional<String> workerProblem()
    {
        return owner.problem().or(transfers::mergeProblem);
    }

    /**
     * Runs the native shutdown on the owner thread and stops it, waiting at most the close timeout
     * for NIXL: NIXL 1.4.0's agent destruction was seen not to return (its UCX progress thread
     * spinning in {@code ucp_worker_arm} with {@code UCX_MM_ERROR_HANDLING=y}), and a close that
     * waited for it would hang its caller for good.
     */
    @Override
    protected void closeInstance()
    {
        RuntimeException failure = null;
        try {
            owner.call(() -> {
                try {
                    shutdown.run();
                }
                finally {
                    owner.requestStop();
                }
                return null;
            }, closeTimeoutNanos, "closing NIXL (cancelling its requests, releasing lists, peers and registrations, destroying the agent)");
        }
        catch (KvBridgeException e) {
            if (e.code() == ErrorCode.DEADLINE_EXCEEDED) {
                // the owner is inside a NIXL call that has not returned: stopping it would wait as long
                throw e;
            }
            failure = e;
        }
        catch (RuntimeException e) {
            failure = e;
        }
        owner.stop(TimeUnit.NANOSECONDS.toMillis(closeTimeoutNanos) + 5_000);
        if (failure != null && !NixlShutdown.closedError(failure)) {
            throw failure;
        }
    }

    @Override
    public String toString()
    {
        return "NixlTransferBackend[" + guard.agentName() + "]";
    }
}
