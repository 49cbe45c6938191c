package io.kvbridge.backend.ucx;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.WriteStop;
import io.kvbridge.transport.AbstractTransferBackend;
import io.kvbridge.transport.Coverage;
import io.kvbridge.transport.Grants;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnerThread;
import io.kvbridge.transport.RegionCover;
import io.kvbridge.transport.TransportTypes;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The UCX transport: one UCP context and worker per instance, driven by one owner thread that
 * makes every UCX call ({@link UcxOwnerLoop}). This class checks arguments and delegates: memory to
 * {@link UcxMemory}, peers to {@link UcxEndpoints}, transfers to {@link UcxTransfers}, messages to
 * {@link UcxMessaging}, closing to {@link UcxShutdown}. Callers hand the owner work (calls, and
 * posted transfers without allocating) and read results from the transfer table; they never touch
 * a UCX handle.
 *
 * <p>Threads: any thread may call any method; every field is final and thread-safe or confined to
 * the owner thread inside the class that holds it.
 */
final class UcxTransferBackend extends AbstractTransferBackend<UcxPeer, UcxPreparedList>
{
    /** Largest notification a transfer or {@link #notify} may carry. */
    static final int MAX_NOTIFICATION_BYTES = UcxMessaging.MAX_NOTIFICATION_BYTES;
    private static final SecureRandom IDS = new SecureRandom();

    private final UcxOptions options;
    private final long instanceId;
    private final UcxWorker worker;
    private final UcxOwnerLoop loop;
    private final OwnerThread owner;
    private final UcxMemory memory;
    private final UcxEndpoints endpoints;
    private final UcxMessaging messaging;
    private final UcxTransfers transfers;
    private final Grants grants;
    // made once, not per revoke; an owner that stopped took its connections with it: nobody is left to cut off then
    private final Consumer<byte[]> cutOff;
    private final UcxActiveMessages activeMessages;

    UcxTransferBackend(String agentName, UcxOptions options)
    {
        InstanceGuard guard = new InstanceGuard(UcxBackendFactory.NAME, requireNonNull(agentName, "agentName is null"));
        requireNonNull(options, "options is null");
        long id = IDS.nextLong();
        Inbox notifications = new Inbox();
        UcxWorker ucxWorker = new UcxWorker(agentName, options);
        UcxOwnerLoop ownerLoop = new UcxOwnerLoop(agentName, guard.description(), options, ucxWorker);
        OwnerThread ownerThread = ownerLoop.owner();
        UcxMemory ucxMemory = new UcxMemory(guard.description(), ucxWorker, options.staggerAllocations(), !options.granted());
        UcxEndpoints ucxEndpoints = new UcxEndpoints(guard, options, ucxWorker, ownerThread);
        UcxMessaging ucxMessaging = new UcxMessaging(agentName, id, ucxWorker, ucxEndpoints, notifications);
        UcxTransfers ucxTransfers = new UcxTransfers(guard.description(), id, options, ucxWorker, ucxMemory, ucxEndpoints, ucxMessaging, notifications,
                ownerThread);
        Grants ucxGrants = new Grants(guard.description());
        UcxActiveMessages ucxActiveMessages = options.granted() ? new UcxActiveMessages(guard.description(), ucxWorker, ucxEndpoints, ucxGrants, options.eagerMaxBytes()) : null;
        super(guard, new TransportTypes<>(UcxPeer.class, UcxPreparedList.class, MAX_NOTIFICATION_BYTES), ucxTransfers.table(), notifications);
        this.instanceId = id;
        this.options = options;
        this.worker = ucxWorker;
        this.loop = ownerLoop;
        this.owner = ownerThread;
        this.memory = ucxMemory;
        this.endpoints = ucxEndpoints;
        this.messaging = ucxMessaging;
        this.transfers = ucxTransfers;
        this.grants = ucxGrants;
        this.activeMessages = ucxActiveMessages;
        this.cutOff = key -> owner.runUnlessStopped(() -> activeMessages.cutOff(key));
        loop.start(transfers, messaging, endpoints, activeMessages, new UcxShutdown(guard.description(), options, worker, memory, endpoints, messaging,
                transfers, activeMessages));
        try {
            loop.awaitStart();
        }
        catch (KvBridgeException e) {
            guard.close();
            loop.requestStop();
            owner.join(joinMillis());
            throw e;
        }
    }

    /** @return the UCX transport resources this instance's context selected, e.g. {@code tcp/lo}. */
    String transports()
    {
        return worker.transports();
    }

    @Override
    public void register(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        checkOpen();
        memory.checkKind(allocation.kind(), "register");
        owner.call(() -> {
            memory.register(allocation);
            return null;
        });
    }

    @Override
    public Allocation allocate(long bytes, MemoryKind kind, int device)
    {
        requireNonNull(kind, "kind is null");
        KvBridgeException.checkArgument(bytes > 0 && bytes <= UcxMemory.MAX_ALLOCATION_BYTES, "bytes=%d is not between 1 and %d", bytes,
                UcxMemory.MAX_ALLOCATION_BYTES);
        checkOpen();
        if (kind != MemoryKind.HOST || device != 0) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, String.format(Locale.ROOT,
                    "ucx allocates host memory only, asked for %s device %d; allocate device memory yourself and register() it", kind, device));
        }
        return owner.call(() -> memory.allocate(bytes));
    }

    @Override
    public void deregister(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        checkOpen();
        owner.call(() -> {
            memory.deregister(allocation);
            return null;
        });
    }

    @Override
    public byte[] localMetadata()
    {
        checkOpen();
        List<UcxMetadata.Region> regions = new ArrayList<>();
        for (UcxRegistration registration : memory.registrations().all()) {
            regions.add(new UcxMetadata.Region(registration.allocation().address(), registration.allocation().bytes(), registration.packedKey));
        }
        return new UcxMetadata(instanceId, guard.agentName(), worker.workerAddress(), options.tcpSegmentBytes(), regions).encode();
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        checkOpen();
        return endpoints.connect(UcxMetadata.decode(peerMetadata));
    }

    @Override
    protected void disconnectChecked(UcxPeer ucxPeer)
    {
        checkOpen();
        owner.call(() -> {
            endpoints.disconnect(ucxPeer);
            return null;
        });
    }

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        checkOpen();
        memory.checkKind(descriptors.kind(), "prepare");
        Coverage coverage = memory.registrations().cover(descriptors);
        return lists.add(UcxPreparedList.local(guard, descriptors.kind(), descriptors.device(), descriptors.addresses(), descriptors.lengths(),
                coverage.registrationIds(), coverage.registrations()));
    }

    @Override
    protected UcxPreparedList prepareRemoteChecked(UcxPeer ucxPeer, DescriptorList descriptors)
    {
        checkOpen();
        ucxPeer.checkUsable("connect() again");
        if (descriptors.kind() != MemoryKind.HOST) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "peer '" + ucxPeer.name() + "' advertises host memory only, got "
                    + descriptors.kind() + " descriptors");
        }
        UcxRemoteRegion[] regions = ucxPeer.regions;
        long[] addresses = descriptors.addresses();
        long[] lengths = descriptors.lengths();
        RegionCover<UcxRemoteRegion> cover = RegionCover.of(addresses, lengths, UcxPeer.regionsOf(regions),
                (i, address, length) -> new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                        "descriptor %d (address=0x%x, length=%d) lies outside the %d regions peer '%s' advertised; if the peer registered "
                                + "more memory, connect() again with its new metadata", i, address, length, regions.length, ucxPeer.name())));
        return lists.add(UcxPreparedList.remote(guard, ucxPeer, addresses, lengths, cover.regionIds(), cover.regions().toArray(new UcxRemoteRegion[0])));
    }

    /**
     * With {@code access=granted} peers reach only what a live grant covers; with
     * {@code access=registered} nothing is checked and this returns {@link #NO_GRANT}.
     */
    @Override
    public long grant(byte[] key, TransferOp access, PreparedList local, int[] indices, int count)
    {
        UcxPreparedList list = ownList(local);
        checkOpen();
        if (activeMessages == null) {
            return NO_GRANT;
        }
        return grants.grant(key, access, list, indices, count);
    }

    /**
     * With {@code access=granted} this instance's owner lands every byte a peer sends after checking
     * its grant, and a revoke returns once the admitted runs settled or the key was cut off; with
     * {@code access=registered} peers put one-sided into registered memory and nothing stops them.
     */
    @Override
    public WriteStop writeStopOnRevoke()
    {
        return options.granted() ? WriteStop.ON_RETURN : WriteStop.AFTER_PROOF;
    }

    /**
     * Waits up to {@code close-timeout-ms} for accesses admitted under the grant; peers still
     * reading or writing then are cut off (their endpoints closed by force) before this returns.
     */
    @Override
    public void revoke(long grant)
    {
        grants.revoke(grant, TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis()), cutOff);
    }

    @Override
    protected long postChecked(TransferRequest request, UcxPreparedList local, UcxPreparedList remote)
    {
        checkOpen();
        return transfers.post(request);
    }

    @Override
    protected void notifyChecked(UcxPeer ucxPeer, byte[] message)
    {
        checkOpen();
        owner.call(() -> {
            String unusable = ucxPeer.unusableReason();
            if (unusable != null) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + ucxPeer.name() + "' cannot be notified: " + unusable);
            }
            messaging.send(ucxPeer, UcxMessaging.TAG_NOTIFY, message, message.length, "notification");
            return null;
        });
    }

    /**
     * UCX cannot cancel one put or get: a transfer released while it runs has its peer's endpoint
     * closed by force before this returns, which ends every operation on it, so no byte of the
     * released transfer moves afterwards. The peer is unusable from then on; connect again.
     */
    @Override
    protected void cancelRunning()
    {
        try {
            owner.call(transfers::cancelReleased);
        }
        catch (KvBridgeException e) {
            if (e.code() != ErrorCode.CLOSED) {
                throw e;
            }
            // the owner stopped: its worker is destroyed or being destroyed, which ends every operation
        }
    }

    @Override
    protected BackendResources held(int transfers)
    {
        return new BackendResources(memory.registrations().size(), lists.size(), endpoints.peerCount(), transfers);
    }

    /**
     * Whether this instance can serve: its owner thread runs. What peers sent (refused accesses,
     * malformed active messages) is counted and logged and in {@link #peerReport()}, never here: any
     * process that reaches the worker could otherwise turn the engine's health false for good.
     */
    @Override
    protected Optional<String> workerProblem()
    {
        return owner.problem();
    }

    /** {@return the refused peer accesses naming their peers, and dropped malformed messages, for diagnostics; empty when none} */
    Optional<String> peerReport()
    {
        Optional<String> refused = grants.problem();
        long malformed = activeMessages == null ? 0 : activeMessages.malformed();
        if (malformed == 0) {
            return refused;
        }
        String dropped = guard.description() + " dropped " + malformed + " malformed active messages from peers";
        return Optional.of(refused.map(text -> text + "; " + dropped).orElse(dropped));
    }

    /** {@return how many peer accesses this instance refused, late ones (under a key revoked lately) not included} */
    long refusals()
    {
        return grants.refusals();
    }

    /** {@return how many accesses came under a key this instance revoked lately} */
    long lateRefusals()
    {
        return grants.lateRefusals();
    }

    /** {@return how many peer accesses this instance admitted under a grant and has not ended} */
    int grantedAccessesInFlight()
    {
        return grants.admitted();
    }

    /** {@return how many malformed active messages this instance dropped} */
    long malformedMessages()
    {
        return activeMessages == null ? 0 : activeMessages.malformed();
    }

    @Override
    protected void closeInstance()
    {
        transfers.closing();
        loop.requestStop();
        owner.join(joinMillis());
        endpoints.closeAll();
        lists.releaseAll(null);
        memory.registrations().clear();
    }

    // the shutdown's two rounds of draining, its worker flush, and slack
    private long joinMillis()
    {
        return options.closeTimeoutMillis() * 3L + 10_000;
    }

    private void checkOpen()
    {
        guard.checkOpen();
        if (owner.terminated()) {
            throw guard.closedError();
        }
    }

    @Override
    public String toString()
    {
        return "UcxTransferBackend[" + guard.agentName() + ", tls=" + UcxWorker.describe(options.tls()) + ", access="
                + (options.granted() ? "granted" : "registered") + "]";
    }
}
