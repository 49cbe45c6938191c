package io.kvbridge.backend.cudaipc;

import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.cudaipc.CudaIpcMetadata.Export;
import io.kvbridge.backend.cudaipc.LocalMemory.LocalRegistration;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.transport.AbstractTransferBackend;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.PeerText;
import io.kvbridge.transport.PostChecks;
import io.kvbridge.transport.RegionCover;
import io.kvbridge.transport.Registrations;
import io.kvbridge.transport.TransferTable;
import io.kvbridge.transport.TransportTypes;
import io.kvbridge.transport.libc.Libc;
import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToIntFunction;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@code cuda-ipc} instance: device (and host) memory moved between processes on one node with
 * the CUDA driver's asynchronous copies, peers' allocations opened through legacy IPC handles or
 * imported VMM file descriptors. Built on the toolkit: handles, registrations, lists and
 * notifications are its parts; this class adds the driver, the control socket and the copies.
 *
 * <p>Threads: every driver call runs on the instance's owner thread ({@link CudaIpcEngine}); the
 * control socket has its own thread ({@link ControlChannel}); posts check and resolve on the
 * caller's thread and hand over without waiting.
 */
final class CudaIpcTransferBackend extends AbstractTransferBackend<CudaIpcPeer, CudaIpcList>
{
    /** Random per JVM: two instances with the same token share an address space. */
    static final long PROCESS_TOKEN = new SecureRandom().nextLong();
    private static final Logger LOG = LoggerFactory.getLogger(CudaIpcTransferBackend.class);
    /** Open instances of this JVM by agent name and socket, so a same-process peer's close is seen at once. */
    private static final Map<String, InstanceGuard> LOCAL_INSTANCES = new ConcurrentHashMap<>();
    private static final long CONNECT_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final TransferTable<CudaIpcTransfer> transfers;
    private final Inbox inbox;
    private final Registrations<LocalRegistration> registrations;
    private final Set<CudaIpcPeer> peers = ConcurrentHashMap.newKeySet();
    private final Map<Integer, LocalRegistration> exported = new ConcurrentHashMap<>();
    private final AtomicInteger regionIds = new AtomicInteger();
    private final CudaIpcEngine engine;
    private final ControlChannel control;
    private final String allocationMode;
    private final boolean vmmSupported;
    private final String localKey;
    private final NotificationBound notificationBound;
    /** The inbox's drain, made once: a drain allocates nothing. */
    private final ToIntFunction<NotificationSink> drainInbox;
    private final ExportGrants exportGrants;
    private final PassedRegions passedRegions;
    private final long closeTimeoutNanos;
    private final AtomicInteger unansweredCloses = new AtomicInteger();
    /** Which agents were passed the descriptor of each exported region, to unmap it when its last grant is revoked. */
    private final Map<Integer, Set<String>> passedTo = new ConcurrentHashMap<>();

    CudaIpcTransferBackend(String agentName, int device, int streams, int batchSize, int maxInFlight, long transferTimeoutMillis, String allocationMode,
            boolean vmmSupported, long closeTimeoutMillis, Optional<byte[]> connectionKey, int maxQueuedNotifications)
    {
        InstanceGuard guard = new InstanceGuard(CudaIpcBackendFactory.NAME, agentName);
        CudaIpcEngine owner = new CudaIpcEngine(guard, device, streams, batchSize, TimeUnit.MILLISECONDS.toNanos(transferTimeoutMillis), maxInFlight + 64,
                TimeUnit.MILLISECONDS.toNanos(closeTimeoutMillis));
        TransferTable<CudaIpcTransfer> table = new TransferTable<>(guard.description(), maxInFlight, index -> new CudaIpcTransfer(index, owner));
        Inbox notifications = new Inbox();
        super(guard, new TransportTypes<>(CudaIpcPeer.class, CudaIpcList.class, ControlChannel.MAX_NOTIFICATION), table, notifications);
        this.transfers = table;
        this.inbox = notifications;
        this.notificationBound = new NotificationBound(maxQueuedNotifications);
        this.drainInbox = notifications::drain;
        this.exportGrants = new ExportGrants(guard.description());
        this.engine = owner;
        this.allocationMode = allocationMode;
        this.vmmSupported = vmmSupported;
        this.registrations = new Registrations<>(guard.description());
        CudaIpcEvents events = new CudaIpcEvents(guard, notifications, notificationBound, exported, exportGrants, passedTo, peers, owner,
                TimeUnit.MILLISECONDS.toNanos(closeTimeoutMillis));
        this.control = new ControlChannel(guard.description(), agentName, new ControlAuth(connectionKey), events);
        events.attach(control);
        this.localKey = agentName + "@" + control.socketName;
        this.passedRegions = new PassedRegions(control, owner);
        this.closeTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(closeTimeoutMillis);
        try {
            engine.start(table, notifications, control, this::releaseNative);
        }
        catch (RuntimeException e) {
            control.close();
            throw e;
        }
        LOCAL_INSTANCES.put(localKey, guard);
    }

    @Override
    public void register(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        guard.checkOpen();
        registrations.checkFree(allocation);
        engine.call(() -> {
            addRegistration(LocalMemory.register(allocation, regionIds.incrementAndGet(), engine.device(), null));
            return null;
        });
    }

    private void addRegistration(LocalRegistration registration)
    {
        try {
            registrations.add(registration);
        }
        catch (RuntimeException e) {
            LocalMemory.release(registration, engine.errno);
            throw e;
        }
        if (registration.export.passesDescriptor()) {
            exported.put(registration.id, registration);
        }
    }

    @Override
    public Allocation allocate(long bytes, MemoryKind kind, int device)
    {
        requireNonNull(kind, "kind is null");
        KvBridgeException.checkArgument(bytes > 0, "bytes=%d is not positive", bytes);
        guard.checkOpen();
        if (kind == MemoryKind.DEVICE && device != engine.device()) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "device=" + device + " is not this instance's device " + engine.device()
                    + "; create a cuda-ipc instance with device=" + device);
        }
        return engine.call(() -> {
            LocalMemory.Allocated allocated = LocalMemory.allocate(bytes, kind, device, allocationMode, vmmSupported, engine.errno);
            try {
                addRegistration(LocalMemory.register(allocated.allocation(), regionIds.incrementAndGet(), engine.device(), allocated));
            }
            catch (RuntimeException e) {
                LocalMemory.free(allocated, engine.errno);
                throw e;
            }
            return allocated.allocation();
        });
    }

    @Override
    public void copyFromHost(MemorySegment source, Allocation destination, long offset)
    {
        guard.checkOpen();
        long address = registrations.checkHostCopy(destination, offset, source);
        engine.copyHost(address, source.address(), source.byteSize(), "copying " + source.byteSize() + " host bytes to 0x" + Long.toHexString(address)
                + " (" + destination.kind() + " device " + destination.device() + ")");
    }

    @Override
    public void copyToHost(Allocation source, long offset, MemorySegment destination)
    {
        guard.checkOpen();
        long address = registrations.checkHostCopy(source, offset, destination);
        engine.copyHost(destination.address(), address, destination.byteSize(), "copying " + destination.byteSize() + " bytes from 0x"
                + Long.toHexString(address) + " (" + source.kind() + " device " + source.device() + ") to host memory");
    }

    @Override
    public void deregister(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        guard.checkOpen();
        LocalRegistration removed = registrations.remove(allocation);
        exported.remove(removed.id);
        engine.call(() -> {
            LocalMemory.release(removed, engine.errno);
            return null;
        });
    }

    @Override
    public byte[] localMetadata()
    {
        guard.checkOpen();
        List<CudaIpcMetadata.Region> regions = new ArrayList<>();
        for (LocalRegistration registration : registrations.all()) {
            regions.add(registration.advertised());
        }
        return new CudaIpcMetadata(agentName(), Libc.getpid(), PROCESS_TOKEN, control.socketName, regions).encode();
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        guard.checkOpen();
        CudaIpcMetadata metadata = CudaIpcMetadata.decode(peerMetadata);
        boolean sameProcess = metadata.processToken() == PROCESS_TOKEN;
        CudaIpcPeer peer = new CudaIpcPeer(guard, metadata);
        if (sameProcess) {
            // a peer in this JVM is unusable the moment its instance closes, before its socket hangs up
            String key = metadata.agentName() + "@" + metadata.socketName();
            peer.localInstance = () -> {
                InstanceGuard target = LOCAL_INSTANCES.get(key);
                return target == null || target.isClosed() ? "it was closed" : null;
            };
        }
        peer.link = control.connect(metadata.socketName(), metadata.pid(), metadata.agentName(), System.nanoTime() + CONNECT_DEADLINE_NANOS);
        try {
            engine.call(() -> {
                peer.open(metadata, engine.device(), engine.errno);
                return null;
            });
        }
        catch (RuntimeException e) {
            control.close(peer.link);
            peer.markUnusable("opening its memory failed");
            engine.call(() -> {
                peer.closeMappings(engine.errno);
                return null;
            });
            throw e;
        }
        if (guard.isClosed()) {
            control.close(peer.link);
            throw guard.closedError();
        }
        peers.add(peer);
        return peer;
    }

    @Override
    protected void disconnectChecked(CudaIpcPeer own)
    {
        own.markUnusable("it was disconnected");
        if (peers.remove(own)) {
            lists.releaseAll(own);
            control.close(own.link);
            if (!guard.isClosed()) {
                engine.call(() -> {
                    engine.retire(own);
                    return null;
                });
            }
        }
    }

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        guard.checkOpen();
        return lists.add(CudaIpcList.local(guard, descriptors, registrations.cover(descriptors)));
    }

    @Override
    protected CudaIpcList prepareRemoteChecked(CudaIpcPeer own, DescriptorList descriptors)
    {
        own.checkUsable("connect() again");
        MemoryKind kind = descriptors.kind();
        int device = descriptors.device();
        RegionCover<CudaIpcPeer.RemoteRegion> cover = RegionCover.of(descriptors.addresses(), descriptors.lengths(), new RegionCover.Regions<>()
        {
            @Override
            public CudaIpcPeer.RemoteRegion find(long address, long length)
            {
                CudaIpcPeer.RemoteRegion region = own.find(address, length);
                return region != null && region.advertised.export().device() == (kind == MemoryKind.DEVICE) && region.advertised.device() == device
                        ? region : null;
            }

            @Override
            public boolean contains(CudaIpcPeer.RemoteRegion region, long address, long length)
            {
                return region.advertised.contains(address, length);
            }
        }, (index, address, length) -> new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                "descriptor %d (address=0x%x, length=%d, %s device %d) lies outside every region peer '%s' registered; the peer must register it "
                        + "and its metadata be connected again", index, address, length, kind, device, own.name())));
        for (CudaIpcPeer.RemoteRegion region : cover.regions()) {
            String unreachable = own.unreachableReason(region);
            if (unreachable != null) {
                throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, unreachable);
            }
        }
        CudaIpcPeer.RemoteRegion[] regions = cover.regions().toArray(new CudaIpcPeer.RemoteRegion[0]);
        return lists.add(CudaIpcList.remote(guard, own, descriptors, cover.regionIds(), regions));
    }

    /**
     * Grants peers presenting {@code key} the exported allocations the descriptors lie in: a peer in
     * another process is passed an allocation's descriptor only under such a grant. The allocation
     * is the unit: a descriptor opens all of it.
     */
    @Override
    public long grant(byte[] key, TransferOp access, PreparedList local, int[] indices, int count)
    {
        requireNonNull(key, "key is null");
        requireNonNull(access, "access is null");
        requireNonNull(indices, "indices is null");
        guard.checkOpen();
        CudaIpcList list = ownList(local);
        if (key.length == 0 || key.length > MAX_GRANT_KEY_BYTES) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "grant key of " + key.length + " bytes (expected: 1 to " + MAX_GRANT_KEY_BYTES + ")");
        }
        if (list.peer() != null) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "a grant names a local list (prepareLocal), not one of peer '" + list.peer().name() + "'");
        }
        if (count < 0 || count > indices.length) {
            throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, "count=" + count + " with " + indices.length + " indices");
        }
        int[] regionIds = new int[count];
        int distinct = 0;
        for (int i = 0; i < count; i++) {
            int index = indices[i];
            if (index < 0 || index >= list.size()) {
                throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, "grant index " + index + " at position " + i + " lies outside a list of "
                        + list.size() + " descriptors");
            }
            int id = ((LocalRegistration) list.registration(list.regionId(index))).id;
            if (distinct == 0 || regionIds[distinct - 1] != id) {
                regionIds[distinct++] = id;
            }
        }
        return exportGrants.grant(key, Arrays.stream(regionIds, 0, distinct).distinct().toArray());
    }

    /**
     * Ends a grant: its key passes no more descriptors. When it was the last live grant in a region
     * whose descriptor peers were passed, they are told to unmap that allocation, and the revoke
     * waits, at most {@code close-timeout-ms}, until each said it did, after its last copy against
     * this instance; a peer that does not answer in time is logged and counted.
     */
    @Override
    public void revoke(long grant)
    {
        int[] regions = exportGrants.revoke(grant);
        List<Integer> unmapped = new ArrayList<>();
        Set<String> agents = new HashSet<>();
        for (int id : regions) {
            Set<String> passed = exportGrants.anyLiveIn(id) ? null : passedTo.remove(id);
            if (passed != null && !passed.isEmpty()) {
                unmapped.add(id);
                agents.addAll(passed);
            }
        }
        if (unmapped.isEmpty() || guard.isClosed()) {
            return;
        }
        List<String> silent = control.unmapHandshake(unmapped.stream().mapToInt(Integer::intValue).toArray(), agents,
                System.nanoTime() + closeTimeoutNanos);
        if (!silent.isEmpty()) {
            unansweredCloses.addAndGet(silent.size());
            LOG.warn("{}: peers {} did not say within close-timeout-ms={} that they unmapped regions {} after their last grant was revoked; their "
                    + "late copies may still reach that memory", guard.description(), silent, TimeUnit.NANOSECONDS.toMillis(closeTimeoutNanos), unmapped);
        }
    }

    /**
     * A peer's copies run in its own process, through mappings of this instance's memory that die with
     * it: its process's end proves no copy of it lands any more. The pid is the one the kernel gave as
     * the control socket's {@code SO_PEERCRED}, watched through a pidfd since the connection was
     * authenticated (in either direction), so a pid reused later proves nothing.
     */
    @Override
    public String writerExited(String peerAgent)
    {
        return control.processes.exited(peerAgent);
    }

    @Override
    public int drainNotifications(NotificationSink sink)
    {
        requireNonNull(sink, "sink is null");
        return notificationBound.drain(sink, drainInbox);
    }

    /** @return notifications dropped because the inbox was full. */
    long droppedNotifications()
    {
        return notificationBound.dropped();
    }

    /** @return peers that did not answer a close of this instance, or the unmap notice of a revoke, in time. */
    int unansweredCloses()
    {
        return unansweredCloses.get();
    }

    /** @return the control socket's counts: connections refused in the handshake, and silent ones shed. */
    long[] controlCounts()
    {
        return new long[] {control.refusedConnections(), control.shedConnections(), exportGrants.refusals()};
    }

    @Override
    protected long postChecked(TransferRequest request, CudaIpcList local, CudaIpcList remote)
    {
        CudaIpcTransfer transfer = transfers.acquire();
        try {
            PostChecks.resolve(transfer.copies, request, true);
            // after the checks of every index: opens the peer's regions passed as descriptors on the first post that needs them
            passedRegions.ensureOpened(remote, request.remoteIndices(), request.count(), request.grantKey());
        }
        catch (RuntimeException e) {
            transfers.abandon(transfer);
            throw e;
        }
        transfer.op = request.op();
        transfer.local = local;
        transfer.remote = remote;
        transfer.peer = (CudaIpcPeer) remote.transportPeer();
        transfer.notification.set(request.notification());
        long handle = transfer.handle();
        engine.submit(transfer);
        return handle;
    }

    @Override
    protected void notifyChecked(CudaIpcPeer own, byte[] message)
    {
        String problem = own.unusableReason();
        ControlChannel.Link link = own.link;
        if (problem == null) {
            problem = link == null ? "it has no control link" : control.notify(link, message, message.length);
        }
        if (problem != null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot notify peer '" + own.name() + "': " + problem);
        }
    }

    @Override
    protected BackendResources held(int transferCount)
    {
        return new BackendResources(registrations.size(), lists.size(), peers.size(), transferCount);
    }

    /**
     * Whether this instance can serve: its control thread runs and its CUDA context is usable. What
     * peers did (connections refused in the handshake, descriptor requests outside their grants,
     * notifications dropped) is counted, logged and in {@link #peerReport()}, never here: any process
     * of the host reaches the control socket and could otherwise turn the engine's health false.
     */
    @Override
    protected Optional<String> workerProblem()
    {
        if (!control.alive()) {
            return Optional.of("the control thread of " + guard.description() + " stopped; close the instance and create a new one");
        }
        return engine.problem();
    }

    /** {@return what peers did that this instance refused or dropped, for diagnostics; empty when nothing} */
    Optional<String> peerReport()
    {
        String report = Stream.of(control.problem(), exportGrants.problem(), notificationBound.problem())
                .flatMap(Optional::stream).collect(Collectors.joining("; "));
        return report.isEmpty() ? Optional.empty() : Optional.of(PeerText.printable(report));
    }

    @Override
    protected void closeInstance()
    {
        LOCAL_INSTANCES.remove(localKey);
        for (CudaIpcPeer peer : peers) {
            peer.markUnusable("this transport was closed");
        }
        lists.releaseAll(null);
        // peers that mapped this instance's memory unmap it, after their running copies, before it is freed
        List<String> silent = control.closeHandshake(System.nanoTime() + closeTimeoutNanos);
        if (!silent.isEmpty()) {
            unansweredCloses.addAndGet(silent.size());
            LOG.warn("{}: peers {} did not say within close-timeout-ms={} that they unmapped this instance's memory; closing anyway, their late copies "
                    + "may still land in memory freed now", guard.description(), silent, TimeUnit.NANOSECONDS.toMillis(closeTimeoutNanos));
        }
        // the owner drains running copies, then releases the native state and the context
        try {
            engine.stop();
        }
        catch (KvBridgeException stuck) {
            // the owner is inside a driver call: the peers and exports stay with it, the control channel still closes
            control.close();
            throw stuck;
        }
        control.close();
        peers.clear();
        exported.clear();
    }

    /** Owner thread, once the loop has ended: mappings of peers, then local memory. */
    private void releaseNative()
    {
        engine.retireAllNow(new ArrayList<>(peers));
        for (LocalRegistration registration : registrations.clear()) {
            LocalMemory.release(registration, engine.errno);
        }
    }

    /** @return how the instance issues copies: the batch entry point, or why single copies. */
    String copyPath()
    {
        guard.checkOpen();
        return engine.call(engine::copyPath);
    }

    Export exportOf(Allocation allocation)
    {
        LocalRegistration registration = registrations.find(allocation.address(), allocation.bytes(), allocation.kind(), allocation.device());
        return registration == null ? null : registration.export;
    }
}
