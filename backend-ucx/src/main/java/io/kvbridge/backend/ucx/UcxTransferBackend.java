package io.kvbridge.backend.ucx;

import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.ucx.ffm.Ucp;
import io.kvbridge.backend.ucx.ffm.WakeupFd;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PostArguments;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * The UCX transport: one UCP context and worker per instance, driven by one owner thread that makes
 * every UCX call. Other threads hand it work (commands, and posted transfers through a queue that
 * allocates nothing) and read results from volatile fields; they never touch a UCX handle.
 *
 * <p>A transfer is issued as one {@code ucp_put_nbx} / {@code ucp_get_nbx} per run of descriptor
 * pairs, followed by one {@code ucp_ep_flush_nbx}. A run is a pair, extended by the pairs after it
 * while each starts where the run ends on both sides, within the same local memory handle and the
 * same remote key ({@link io.kvbridge.spi.transfer.Capability#COALESCING}): one operation must be
 * covered by one registration on each side. When the flush completes every byte is in place at the
 * peer (WRITE) or here (READ), and only then is the notification sent as a tagged message. Requests
 * are polled; the only upcall is UCX's endpoint error handler.
 *
 * <p>The owner thread polls while work is in flight (a peer's emulated RMA needs this side to
 * progress), keeps polling for {@code idle-spin-us} after the last event, then sleeps on the
 * worker's event descriptor and a private eventfd other threads signal.
 */
final class UcxTransferBackend implements TransferBackend
{
    private static final System.Logger LOG = System.getLogger(UcxTransferBackend.class.getName());

    /** Largest notification a transfer or {@link #notify} may carry. */
    static final int MAX_NOTIFICATION_BYTES = 64 * 1024;

    // tagged messages between kvbridge instances: "KVBR" in the high half, the kind in the low half
    private static final long TAG_PREFIX = 0x4B56425200000000L;
    private static final long TAG_PREFIX_MASK = 0xFFFFFFFF00000000L;
    private static final long TAG_NOTIFY = TAG_PREFIX | 1;
    private static final long TAG_BYE = TAG_PREFIX | 2;
    private static final ValueLayout.OfLong WIRE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort WIRE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    // progress the worker every so many operations while issuing a long transfer
    private static final int PROGRESS_EVERY = 64;
    private static final int PROGRESS_BURST = 32;
    private static final int SLEEP_MILLIS = 100;
    private static final long RECEIVE_LIMIT_BYTES = 16L << 20;
    private static final SecureRandom IDS = new SecureRandom();
    // 2^62: no host maps more, and the staggered size cannot overflow
    private static final long MAX_ALLOCATION_BYTES = 1L << 62;

    private final String agentName;
    private final long instanceId;
    private final UcxOptions options;
    private final AllocationStagger stagger = new AllocationStagger(IDS.nextInt(AllocationStagger.OFFSETS));
    private final byte[] senderHeader;
    private final Thread owner;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private volatile boolean stopRequested;
    private volatile boolean ownerExited;
    // why the owner thread left its loop, when it was not asked to
    private volatile Throwable ownerFailure;

    // published once by the owner thread before the constructor returns
    private volatile byte[] workerAddress;
    private volatile boolean deviceMemory;
    private volatile String transports = "";
    private volatile String version = "";

    private final ConcurrentLinkedQueue<Command<?>> commands = new ConcurrentLinkedQueue<>();
    private final Object postLock = new Object();
    private UcxTransfer postedHead;
    private UcxTransfer postedTail;
    private volatile boolean sleeping;
    // unparked whenever a transfer ends or a notification arrives
    private volatile Thread progressWaiter;
    private final ConcurrentLinkedQueue<Inbound> inbox = new ConcurrentLinkedQueue<>();

    // sorted by address, replaced by the owner thread, read by any thread
    private volatile UcxRegistration[] registrations = new UcxRegistration[0];
    // owner thread only: how many allocations allocate() made, which picks each one's offset
    private long allocations;
    private final List<UcxPeer> peers = new ArrayList<>();
    private final Set<UcxPreparedList> preparedLists = new HashSet<>();

    private final Object slotLock = new Object();
    private UcxTransfer[] slots = new UcxTransfer[64];
    private int slotCount;
    private int[] freeSlots = new int[64];
    private int freeCount;
    private int unreleased;

    // owner thread only
    private long context;
    private long worker;
    private int workerFd;
    private WakeupFd wakeup;
    private Arena ownerArena;
    private NativeBuffers buffers;
    private MemorySegment rmaParam;
    private MemorySegment emptyParam;
    private MemorySegment tagInfo;
    private UcxTransfer[] active = new UcxTransfer[64];
    private int activeCount;
    private final List<PendingSend> pendingSends = new ArrayList<>();
    private final List<UcxPeer> retiring = new ArrayList<>();
    // connect() calls waiting for UCX to set their endpoint up
    private final List<Setup> setups = new ArrayList<>();
    private final Map<Long, UcxPeer> peersByToken = new HashMap<>();
    private final List<UcxRegistration> unmapWhenIdle = new ArrayList<>();
    private long receiveRequest;
    private MemorySegment receiveBuffer;
    private Arena receiveArena;
    private long receiveTag;
    private long receiveLength;

    private record Inbound(String sender, byte[] message)
    {
    }

    private record PendingSend(long request, MemorySegment buffer, UcxPeer peer, String what)
    {
    }

    /** Work for the owner thread, with a result the caller waits for. */
    private static final class Command<T>
    {
        final Supplier<T> action;
        final CompletableFuture<T> result = new CompletableFuture<>();

        Command(Supplier<T> action)
        {
            this.action = action;
        }

        void run()
        {
            try {
                result.complete(action.get());
            }
            catch (Throwable e) {
                result.completeExceptionally(e);
            }
        }
    }

    UcxTransferBackend(String agentName, UcxOptions options)
    {
        this.agentName = requireNonNull(agentName, "agentName is null");
        this.options = requireNonNull(options, "options is null");
        this.instanceId = IDS.nextLong();
        byte[] name = agentName.getBytes(StandardCharsets.UTF_8);
        if (name.length == 0 || name.length > UcxMetadata.MAX_NAME_BYTES) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "agent name '" + agentName + "' is " + name.length
                    + " UTF-8 bytes long (expected: 1 to " + UcxMetadata.MAX_NAME_BYTES + ")");
        }
        this.senderHeader = new byte[10 + name.length];
        MemorySegment header = MemorySegment.ofArray(senderHeader);
        header.set(WIRE_LONG, 0, instanceId);
        header.set(WIRE_SHORT, 8, (short) name.length);
        MemorySegment.copy(name, 0, header, ValueLayout.JAVA_BYTE, 10, name.length);
        this.owner = Thread.ofPlatform().daemon().name("kvbridge-ucx-" + agentName).unstarted(this::run);
        owner.start();
        try {
            started.join();
        }
        catch (CompletionException e) {
            closed.set(true);
            joinOwner();
            throw e.getCause() instanceof KvBridgeException failure ? failure
                    : new KvBridgeException(ErrorCode.NATIVE_ERROR, "UCX transport '" + agentName + "' failed to start: " + e.getCause(), e.getCause());
        }
    }

    @Override
    public String name()
    {
        return UcxBackendFactory.NAME;
    }

    @Override
    public String agentName()
    {
        return agentName;
    }

    /** @return the UCX transport resources this instance's context selected, e.g. {@code tcp/lo}. */
    String transports()
    {
        return transports;
    }

    // ---------------------------------------------------------------- memory

    @Override
    public void register(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        checkOpen();
        checkKind(allocation.kind(), "register");
        call(() -> {
            addRegistration(allocation, Ucp.memMap(context, allocation.address(), allocation.bytes()), false);
            return null;
        });
    }

    @Override
    public Allocation allocate(long bytes, MemoryKind kind, int device)
    {
        requireNonNull(kind, "kind is null");
        KvBridgeException.checkArgument(bytes > 0 && bytes <= MAX_ALLOCATION_BYTES, "bytes=%d is not between 1 and %d", bytes, MAX_ALLOCATION_BYTES);
        checkOpen();
        if (kind != MemoryKind.HOST || device != 0) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, String.format(Locale.ROOT,
                    "ucx allocates host memory only, asked for %s device %d; allocate device memory yourself and register() it", kind, device));
        }
        return call(() -> {
            long offset = options.staggerAllocations() ? stagger.offset(bytes, allocations++) : 0;
            long memh = Ucp.memAllocate(context, bytes + offset);
            Allocation allocation = new Allocation(Ucp.memAddress(memh) + offset, bytes, MemoryKind.HOST, 0);
            addRegistration(allocation, memh, true);
            return allocation;
        });
    }

    private void addRegistration(Allocation allocation, long memh, boolean transportOwned)
    {
        UcxRegistration[] current = registrations;
        for (UcxRegistration registration : current) {
            if (registration.allocation.overlaps(allocation)) {
                Ucp.memUnmap(context, memh);
                throw new KvBridgeException(ErrorCode.ALREADY_REGISTERED, allocation + " overlaps registered " + registration.allocation
                        + "; register each physical range once");
            }
        }
        byte[] packedKey;
        try {
            packedKey = Ucp.rkeyPack(context, memh);
        }
        catch (KvBridgeException e) {
            Ucp.memUnmap(context, memh);
            throw e;
        }
        UcxRegistration[] next = Arrays.copyOf(current, current.length + 1);
        next[current.length] = new UcxRegistration(allocation, memh, packedKey, transportOwned);
        Arrays.sort(next, (a, b) -> Long.compare(a.allocation.address(), b.allocation.address()));
        registrations = next;
    }

    @Override
    public void deregister(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        checkOpen();
        call(() -> {
            UcxRegistration[] current = registrations;
            for (int i = 0; i < current.length; i++) {
                if (current[i].allocation.equals(allocation)) {
                    UcxRegistration registration = current[i];
                    UcxRegistration[] next = new UcxRegistration[current.length - 1];
                    System.arraycopy(current, 0, next, 0, i);
                    System.arraycopy(current, i + 1, next, i, current.length - i - 1);
                    registrations = next;
                    registration.live = false;
                    if (registration.inFlight == 0) {
                        unmap(registration);
                    }
                    else {
                        // issued transfers still read or write it: unmap when they finish
                        unmapWhenIdle.add(registration);
                    }
                    return null;
                }
            }
            throw new KvBridgeException(ErrorCode.NOT_REGISTERED, allocation + " is not registered with ucx transport '" + agentName + "'");
        });
    }

    private void unmap(UcxRegistration registration)
    {
        if (!registration.unmapped) {
            registration.unmapped = true;
            Ucp.memUnmap(context, registration.memh);
        }
    }

    private static UcxRegistration registrationOf(UcxRegistration[] sorted, long address, long length, MemoryKind kind, int device)
    {
        int low = 0;
        int high = sorted.length - 1;
        while (low <= high) {
            int middle = (low + high) >>> 1;
            if (sorted[middle].allocation.address() <= address) {
                low = middle + 1;
            }
            else {
                high = middle - 1;
            }
        }
        if (high < 0) {
            return null;
        }
        Allocation candidate = sorted[high].allocation;
        return candidate.kind() == kind && candidate.device() == device && candidate.contains(address, length) ? sorted[high] : null;
    }

    private void checkKind(MemoryKind kind, String what)
    {
        if (kind == MemoryKind.DEVICE) {
            // peers advertise host ranges only, so device memory could not be addressed remotely
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "cannot " + what + " device memory: the ucx transport moves host memory only ("
                    + (deviceMemory ? "this UCX " + version + " could register CUDA memory, but" : "this UCX " + version + " has no CUDA support, and")
                    + " kvbridge does not advertise device ranges to peers yet); stage device blocks through host memory, or use a device transport");
        }
    }

    // ---------------------------------------------------------------- peers

    @Override
    public byte[] localMetadata()
    {
        checkOpen();
        UcxRegistration[] current = registrations;
        List<UcxMetadata.Region> regions = new ArrayList<>(current.length);
        for (UcxRegistration registration : current) {
            regions.add(new UcxMetadata.Region(registration.allocation.address(), registration.allocation.bytes(), registration.packedKey));
        }
        return new UcxMetadata(instanceId, agentName, workerAddress, regions).encode();
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        checkOpen();
        UcxMetadata metadata = UcxMetadata.decode(peerMetadata);
        Setup setup = call(() -> startSetup(connectOnOwner(metadata)));
        awaitAnswer(setup);
        return setup.peer();
    }

    /** A connect() waiting for UCX to finish setting up its endpoint. */
    private record Setup(UcxPeer peer, long request, CompletableFuture<Void> answered)
    {
    }

    /**
     * Waits until UCX has set the endpoint up, which includes the peer's answer to the wireup
     * request that unpacking its remote keys sends. Returning earlier would let the caller close
     * the peer while it still owes that answer: UCX 1.13 aborts a process that destroys its worker
     * with such an answer unsent (an assertion in {@code ucp_request_send_state_ff}). It also
     * makes an unreachable peer fail here rather than at the first transfer.
     */
    private void awaitAnswer(Setup setup)
    {
        String peer = setup.peer().name;
        try {
            setup.answered().get(options.connectTimeoutMillis(), TimeUnit.MILLISECONDS);
        }
        catch (TimeoutException e) {
            String reason = "it did not answer UCX's connection setup within " + options.connectTimeoutMillis() + " ms";
            if (call(() -> abandonSetup(setup, reason))) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot reach peer '" + peer + "' with tls=" + describe(options.tls()) + ": "
                        + reason + "; check that it is running and reachable, or raise " + UcxOptions.CONNECT_TIMEOUT_MS);
            }
            awaitAnswer(setup);
        }
        catch (InterruptedException e) {
            // abandoned before the flag is set again, which would make the call fail at once
            call(() -> abandonSetup(setup, "connect() was interrupted"));
            Thread.currentThread().interrupt();
            throw new KvBridgeException(ErrorCode.CLOSED, "interrupted while connecting ucx transport '" + agentName + "' to peer '" + peer + "'");
        }
        catch (ExecutionException e) {
            throw e.getCause() instanceof KvBridgeException failure ? failure
                    : new KvBridgeException(ErrorCode.NATIVE_ERROR, "connecting to peer '" + peer + "' failed: " + e.getCause(), e.getCause());
        }
    }

    private UcxPeer connectOnOwner(UcxMetadata metadata)
    {
        synchronized (peers) {
            for (UcxPeer peer : peers) {
                if (peer.instanceId == metadata.instanceId() && peer.unusable == null) {
                    refreshRegions(peer, metadata);
                    return peer;
                }
            }
        }
        long token = Ucp.newEndpointToken();
        UcxPeer peer = new UcxPeer(this, metadata.instanceId(), metadata.agentName(), token);
        try {
            peer.endpoint = Ucp.epCreate(worker, metadata.workerAddress(), token, this::onEndpointError);
        }
        catch (KvBridgeException e) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot reach peer '" + metadata.agentName() + "' with tls="
                    + describe(options.tls()) + ": " + e.getMessage() + "; check that it is running and that both sides share a UCX transport (see ucx_info -d)", e);
        }
        peersByToken.put(token, peer);
        try {
            refreshRegions(peer, metadata);
        }
        catch (KvBridgeException e) {
            peer.unusable = "its metadata could not be used";
            peer.failed = true;
            retire(peer);
            throw e;
        }
        synchronized (peers) {
            peers.add(peer);
        }
        return peer;
    }

    /** Flushes the peer's endpoint: the flush ends once UCX's setup of it, answer included, is done. */
    private Setup startSetup(UcxPeer peer)
    {
        long request = Ucp.epFlushNbx(peer.endpoint, emptyParam);
        boolean pending = request != 0 && !Ucp.isError(request);
        Setup setup = new Setup(peer, pending ? request : 0, new CompletableFuture<>());
        if (pending) {
            setups.add(setup);
        }
        else {
            endSetup(setup, request == 0 ? Ucp.OK : Ucp.statusOf(request));
        }
        return setup;
    }

    private boolean advanceSetups()
    {
        boolean progressed = false;
        for (int i = setups.size() - 1; i >= 0; i--) {
            Setup setup = setups.get(i);
            byte status = Ucp.requestStatus(setup.request());
            if (status != Ucp.IN_PROGRESS) {
                Ucp.requestFree(setup.request());
                setups.remove(i);
                endSetup(setup, status);
                progressed = true;
            }
        }
        return progressed;
    }

    private void endSetup(Setup setup, byte status)
    {
        UcxPeer peer = setup.peer();
        if (status == Ucp.OK && !peer.failed) {
            setup.answered().complete(null);
            return;
        }
        String reason = peer.unusable != null ? peer.unusable : "its connection setup failed: " + Ucp.statusString(status);
        unlist(peer);
        markFailed(peer, reason);
        setup.answered().completeExceptionally(new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot reach peer '" + peer.name + "' with tls="
                + describe(options.tls()) + ": " + reason + "; check that it is running and that both sides share a UCX transport (see ucx_info -d)"));
    }

    /** Gives up a connect() still waiting for its peer; false when the setup ended meanwhile, either way. */
    private boolean abandonSetup(Setup setup, String reason)
    {
        if (setup.answered().isDone()) {
            return false;
        }
        if (setups.remove(setup)) {
            // freed in flight: UCX releases it when the flush ends, which closing the endpoint forces
            Ucp.requestFree(setup.request());
        }
        UcxPeer peer = setup.peer();
        unlist(peer);
        markFailed(peer, reason);
        setup.answered().completeExceptionally(new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peer.name + "': " + reason));
        return true;
    }

    /** Takes a peer off the list of connected peers; false when it already was. */
    private boolean unlist(UcxPeer peer)
    {
        synchronized (peers) {
            if (!peer.listed) {
                return false;
            }
            peer.listed = false;
            peers.remove(peer);
            return true;
        }
    }

    private void refreshRegions(UcxPeer peer, UcxMetadata metadata)
    {
        UcxRemoteRegion[] old = peer.regions;
        UcxRemoteRegion[] next = new UcxRemoteRegion[metadata.regions().size()];
        boolean[] kept = new boolean[old.length];
        try {
            for (int i = 0; i < next.length; i++) {
                UcxMetadata.Region region = metadata.regions().get(i);
                for (int j = 0; j < old.length && next[i] == null; j++) {
                    if (!kept[j] && old[j].advertised.sameAs(region)) {
                        next[i] = old[j];
                        kept[j] = true;
                    }
                }
                if (next[i] == null) {
                    next[i] = new UcxRemoteRegion(region, Ucp.rkeyUnpack(peer.endpoint, region.packedKey()));
                }
            }
        }
        catch (KvBridgeException e) {
            for (int i = 0; i < next.length; i++) {
                if (next[i] != null && !Arrays.asList(old).contains(next[i])) {
                    Ucp.rkeyDestroy(next[i].rkey);
                }
            }
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "peer '" + metadata.agentName() + "' sent a remote key UCX cannot unpack: "
                    + e.getMessage(), e);
        }
        for (int j = 0; j < old.length; j++) {
            if (!kept[j]) {
                old[j].live = false;
                peer.retiredRegions.add(old[j]);
            }
        }
        peer.regions = next;
        destroyRetiredKeys(peer);
    }

    private void destroyRetiredKeys(UcxPeer peer)
    {
        // a key is destroyed only once no issued operation can still use it
        if (peer.inFlight == 0) {
            for (UcxRemoteRegion region : peer.retiredRegions) {
                destroyKey(region);
            }
            peer.retiredRegions.clear();
        }
    }

    private static void destroyKey(UcxRemoteRegion region)
    {
        if (!region.destroyed) {
            region.destroyed = true;
            Ucp.rkeyDestroy(region.rkey);
        }
    }

    @Override
    public void disconnect(Peer peer)
    {
        UcxPeer ucxPeer = ownPeer(peer);
        checkOpen();
        call(() -> {
            if (!unlist(ucxPeer)) {
                return null;
            }
            if (ucxPeer.unusable == null) {
                ucxPeer.unusable = "it was disconnected";
            }
            retire(ucxPeer);
            return null;
        });
    }

    // runs inside ucp_worker_progress on the owner thread: record only, no UCX calls
    private void onEndpointError(long token, byte status)
    {
        UcxPeer peer = peersByToken.get(token);
        if (peer != null) {
            markFailed(peer, "its endpoint failed: " + Ucp.statusString(status));
        }
    }

    private void markFailed(UcxPeer peer, String reason)
    {
        peer.failed = true;
        if (peer.unusable == null) {
            peer.unusable = reason;
        }
        retire(peer);
    }

    // ---------------------------------------------------------------- prepared lists

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        checkOpen();
        checkKind(descriptors.kind(), "prepare");
        UcxRegistration[] current = registrations;
        long[] addresses = descriptors.addresses();
        long[] lengths = descriptors.lengths();
        long[] keys = new long[addresses.length];
        IdentityHashMap<UcxRegistration, Boolean> used = new IdentityHashMap<>();
        UcxRegistration last = null;
        for (int i = 0; i < addresses.length; i++) {
            // consecutive descriptors usually share an allocation: test the last one before searching
            if (last == null || !last.allocation.contains(addresses[i], lengths[i])) {
                last = registrationOf(current, addresses[i], lengths[i], descriptors.kind(), descriptors.device());
                if (last == null) {
                    throw new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                            "descriptor %d (address=0x%x, length=%d, %s device %d) lies outside every allocation registered with '%s'; register the memory first",
                            i, addresses[i], lengths[i], descriptors.kind(), descriptors.device(), agentName));
                }
                used.put(last, Boolean.TRUE);
            }
            keys[i] = last.memh;
        }
        return track(new UcxPreparedList(this, null, descriptors.kind(), addresses, lengths, keys,
                used.keySet().toArray(new UcxRegistration[0]), new UcxRemoteRegion[0]));
    }

    @Override
    public PreparedList prepareRemote(Peer peer, DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        UcxPeer ucxPeer = ownPeer(peer);
        checkOpen();
        String unusable = ucxPeer.unusable;
        if (unusable != null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + ucxPeer.name + "' cannot be used: " + unusable + "; connect() again");
        }
        if (descriptors.kind() != MemoryKind.HOST) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "peer '" + ucxPeer.name + "' advertises host memory only, got "
                    + descriptors.kind() + " descriptors");
        }
        UcxRemoteRegion[] regions = ucxPeer.regions;
        long[] addresses = descriptors.addresses();
        long[] lengths = descriptors.lengths();
        long[] keys = new long[addresses.length];
        IdentityHashMap<UcxRemoteRegion, Boolean> used = new IdentityHashMap<>();
        UcxRemoteRegion last = null;
        for (int i = 0; i < addresses.length; i++) {
            if (last == null || !last.advertised.contains(addresses[i], lengths[i])) {
                last = UcxPeer.regionOf(regions, addresses[i], lengths[i]);
                if (last == null) {
                    throw new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                            "descriptor %d (address=0x%x, length=%d) lies outside the %d regions peer '%s' advertised; if the peer registered "
                                    + "more memory, connect() again with its new metadata", i, addresses[i], lengths[i], regions.length, ucxPeer.name));
                }
                used.put(last, Boolean.TRUE);
            }
            keys[i] = last.rkey;
        }
        return track(new UcxPreparedList(this, ucxPeer, MemoryKind.HOST, addresses, lengths, keys,
                new UcxRegistration[0], used.keySet().toArray(new UcxRemoteRegion[0])));
    }

    private UcxPreparedList track(UcxPreparedList list)
    {
        synchronized (preparedLists) {
            checkOpen();
            preparedLists.add(list);
        }
        return list;
    }

    @Override
    public void releasePrepared(PreparedList list)
    {
        UcxPreparedList ucxList = ownList(list);
        ucxList.released = true;
        synchronized (preparedLists) {
            preparedLists.remove(ucxList);
        }
    }

    // ---------------------------------------------------------------- transfers

    @Override
    public long post(TransferOp op, PreparedList localList, int[] localIndices, PreparedList remoteList, int[] remoteIndices, int count, byte[] notification)
    {
        requireNonNull(op, "op is null");
        requireNonNull(localIndices, "localIndices is null");
        requireNonNull(remoteIndices, "remoteIndices is null");
        checkOpen();
        UcxPreparedList local = ownList(localList);
        UcxPreparedList remote = ownList(remoteList);
        PostArguments.check(local, localIndices, remote, remoteIndices, count);
        if (notification != null && notification.length > MAX_NOTIFICATION_BYTES) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "notification of " + notification.length + " bytes exceeds "
                    + MAX_NOTIFICATION_BYTES + " bytes; send larger payloads as data");
        }
        if (local.released || remote.released) {
            throw new KvBridgeException(ErrorCode.NOT_REGISTERED, "cannot post: a prepared list was released; prepare it again");
        }
        String peerProblem = remote.peer.unusable;
        if (peerProblem != null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot post to peer '" + remote.peer.name + "': " + peerProblem);
        }
        String unusable = local.deadMemory();
        if (unusable == null) {
            unusable = remote.deadMemory();
        }
        if (unusable != null) {
            throw new KvBridgeException(ErrorCode.NOT_REGISTERED, "cannot post: " + unusable);
        }
        UcxTransfer transfer = acquireSlot();
        try {
            transfer.ensureCapacity(count);
            long[] localAddresses = transfer.localAddresses;
            long[] remoteAddresses = transfer.remoteAddresses;
            long[] lengths = transfer.lengths;
            long[] memoryHandles = transfer.memoryHandles;
            long[] remoteKeys = transfer.remoteKeys;
            long bytes = 0;
            int operations = 0;
            for (int i = 0; i < count; i++) {
                int l = localIndices[i];
                int r = remoteIndices[i];
                if (l < 0 || l >= local.addresses.length || r < 0 || r >= remote.addresses.length) {
                    throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, String.format(Locale.ROOT,
                            "pair %d: local index %d of %d descriptors, remote index %d of %d descriptors", i, l, local.addresses.length, r, remote.addresses.length));
                }
                long length = local.lengths[l];
                if (length != remote.lengths[r]) {
                    throw new KvBridgeException(ErrorCode.LENGTH_MISMATCH, String.format(Locale.ROOT,
                            "pair %d: local descriptor %d has %d bytes but remote descriptor %d has %d bytes", i, l, length, r, remote.lengths[r]));
                }
                bytes += length;
                long localAddress = local.addresses[l];
                long remoteAddress = remote.addresses[r];
                long memoryHandle = local.keys[l];
                long remoteKey = remote.keys[r];
                if (operations > 0) {
                    int last = operations - 1;
                    long run = lengths[last];
                    if (memoryHandles[last] == memoryHandle && remoteKeys[last] == remoteKey
                            && localAddresses[last] + run == localAddress && remoteAddresses[last] + run == remoteAddress) {
                        lengths[last] = run + length;
                        continue;
                    }
                }
                localAddresses[operations] = localAddress;
                remoteAddresses[operations] = remoteAddress;
                lengths[operations] = length;
                memoryHandles[operations] = memoryHandle;
                remoteKeys[operations] = remoteKey;
                operations++;
            }
            transfer.pairs = count;
            transfer.operations = operations;
            transfer.bytes = bytes;
            transfer.op = op;
            transfer.peer = remote.peer;
            transfer.localList = local;
            transfer.remoteList = remote;
            transfer.setNotification(notification);
            transfer.postedNanos = System.nanoTime();
            transfer.failure = null;
            transfer.cancelled = false;
            transfer.status = TransferStatus.IN_PROGRESS;
        }
        catch (RuntimeException e) {
            synchronized (slotLock) {
                transfer.status = TransferStatus.DONE;
                transfer.released = true;
                unreleased--;
                recycleLocked(transfer);
            }
            throw e;
        }
        long handle = transfer.handle();
        synchronized (postLock) {
            if (postedTail == null) {
                postedHead = transfer;
            }
            else {
                postedTail.nextPosted = transfer;
            }
            postedTail = transfer;
        }
        wakeOwner();
        return handle;
    }

    @Override
    public TransferStatus status(long handle)
    {
        synchronized (slotLock) {
            return transferOfLocked(handle).status;
        }
    }

    @Override
    public Optional<KvBridgeException> failure(long handle)
    {
        synchronized (slotLock) {
            UcxTransfer transfer = transferOfLocked(handle);
            return transfer.status == TransferStatus.FAILED ? Optional.ofNullable(transfer.failure) : Optional.empty();
        }
    }

    @Override
    public int operations(long handle)
    {
        synchronized (slotLock) {
            return transferOfLocked(handle).operations;
        }
    }

    @Override
    public void release(long handle)
    {
        synchronized (slotLock) {
            UcxTransfer transfer = transferOfLocked(handle);
            transfer.released = true;
            unreleased--;
            if (transfer.status.terminal()) {
                recycleLocked(transfer);
            }
            else {
                // the owner thread recycles the slot once UCX is done with it
                transfer.cancelled = true;
            }
        }
    }

    private UcxTransfer acquireSlot()
    {
        synchronized (slotLock) {
            UcxTransfer transfer;
            if (freeCount > 0) {
                transfer = slots[freeSlots[--freeCount]];
            }
            else {
                if (slotCount == slots.length) {
                    slots = Arrays.copyOf(slots, slots.length * 2);
                }
                transfer = new UcxTransfer(slotCount);
                slots[slotCount++] = transfer;
            }
            transfer.generation++;
            transfer.released = false;
            unreleased++;
            return transfer;
        }
    }

    private void recycleLocked(UcxTransfer transfer)
    {
        transfer.clearReferences();
        transfer.generation++;
        if (freeCount == freeSlots.length) {
            freeSlots = Arrays.copyOf(freeSlots, freeSlots.length * 2);
        }
        freeSlots[freeCount++] = transfer.slot;
    }

    private UcxTransfer transferOfLocked(long handle)
    {
        int slot = (int) handle;
        int generation = (int) (handle >>> 32);
        if (slot < 0 || slot >= slotCount || slots[slot].generation != generation || slots[slot].released) {
            throw new KvBridgeException(ErrorCode.HANDLE_UNKNOWN, "transfer handle 0x" + Long.toHexString(handle)
                    + " is unknown to '" + agentName + "' or was already released");
        }
        return slots[slot];
    }

    // ---------------------------------------------------------------- notifications

    @Override
    public void notify(Peer peer, byte[] message)
    {
        requireNonNull(message, "message is null");
        UcxPeer ucxPeer = ownPeer(peer);
        checkOpen();
        if (message.length > MAX_NOTIFICATION_BYTES) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "notification of " + message.length + " bytes exceeds " + MAX_NOTIFICATION_BYTES + " bytes");
        }
        call(() -> {
            String unusable = ucxPeer.unusable;
            if (unusable != null) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + ucxPeer.name + "' cannot be notified: " + unusable);
            }
            send(ucxPeer, TAG_NOTIFY, message, message.length, "notification");
            return null;
        });
    }

    @Override
    public int drainNotifications(NotificationSink sink)
    {
        requireNonNull(sink, "sink is null");
        int drained = 0;
        Inbound inbound;
        while ((inbound = inbox.poll()) != null) {
            sink.accept(inbound.sender(), inbound.message());
            drained++;
        }
        return drained;
    }

    /** Sends a tagged message prefixed with this instance's identity; owner thread only. */
    private void send(UcxPeer peer, long tag, byte[] payload, int payloadLength, String what)
    {
        if (peer.endpoint == 0) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, what + " to peer '" + peer.name + "' not sent: its endpoint is closed");
        }
        MemorySegment buffer = buffers.take(senderHeader.length + payloadLength);
        MemorySegment.copy(senderHeader, 0, buffer, ValueLayout.JAVA_BYTE, 0, senderHeader.length);
        MemorySegment.copy(payload, 0, buffer, ValueLayout.JAVA_BYTE, senderHeader.length, payloadLength);
        long request = Ucp.tagSendNbx(peer.endpoint, buffer, senderHeader.length + payloadLength, tag, emptyParam);
        if (request == 0) {
            buffers.give(buffer);
        }
        else if (Ucp.isError(request)) {
            buffers.give(buffer);
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, what + " to peer '" + peer.name + "' failed: "
                    + Ucp.describeFailure("ucp_tag_send_nbx", Ucp.statusOf(request)), Ucp.error("ucp_tag_send_nbx", Ucp.statusOf(request)));
        }
        else {
            peer.pendingSends++;
            pendingSends.add(new PendingSend(request, buffer, peer, what));
        }
    }

    // ---------------------------------------------------------------- resources and closing

    @Override
    public boolean wakeOnProgress(Thread waiter)
    {
        progressWaiter = waiter;
        return true;
    }

    @Override
    public BackendResources resources()
    {
        int lists;
        synchronized (preparedLists) {
            lists = preparedLists.size();
        }
        int connected;
        synchronized (peers) {
            connected = peers.size();
        }
        int transfers;
        synchronized (slotLock) {
            transfers = unreleased;
        }
        return new BackendResources(registrations.length, lists, connected, transfers);
    }

    @Override
    public Optional<String> problem()
    {
        if (closed.get()) {
            return Optional.of("ucx transport '" + agentName + "' is closed");
        }
        if (ownerExited || !owner.isAlive()) {
            Throwable failure = ownerFailure;
            return Optional.of("owner thread " + owner.getName() + " of ucx transport '" + agentName + "' has stopped"
                    + (failure == null ? "" : " after " + failure) + " (state=" + owner.getState() + "): no UCX call progresses, so every transfer"
                    + " and notification of this instance stalls; close it and create a new one (the log has the stack trace)");
        }
        return Optional.empty();
    }

    @Override
    public void close()
    {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        stopRequested = true;
        wakeup.signal();
        joinOwner();
        synchronized (slotLock) {
            // close releases every handle: later calls see HANDLE_UNKNOWN
            for (int i = 0; i < slotCount; i++) {
                UcxTransfer transfer = slots[i];
                if (!transfer.released) {
                    transfer.released = true;
                    transfer.cancelled = true;
                    transfer.generation++;
                }
                transfer.clearReferences();
            }
            unreleased = 0;
        }
        synchronized (peers) {
            for (UcxPeer peer : peers) {
                peer.listed = false;
                if (peer.unusable == null) {
                    peer.unusable = "this transport was closed";
                }
            }
            peers.clear();
        }
        synchronized (preparedLists) {
            preparedLists.forEach(list -> list.released = true);
            preparedLists.clear();
        }
        for (UcxRegistration registration : registrations) {
            registration.live = false;
        }
        registrations = new UcxRegistration[0];
        inbox.clear();
        // a waiter learns from its next poll that everything is gone
        wakeWaiter();
        progressWaiter = null;
    }

    private void joinOwner()
    {
        if (Thread.currentThread() == owner) {
            return;
        }
        // the shutdown's two rounds of draining, its worker flush, and slack
        long waitMillis = options.closeTimeoutMillis() * 3L + 10_000;
        try {
            owner.join(waitMillis);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (owner.isAlive()) {
            LOG.log(System.Logger.Level.WARNING, "ucx owner thread {0} did not stop within {1} ms", owner.getName(), waitMillis);
        }
    }

    private void checkOpen()
    {
        if (closed.get() || ownerExited) {
            throw new KvBridgeException(ErrorCode.CLOSED, "ucx transport '" + agentName + "' is closed");
        }
    }

    private UcxPeer ownPeer(Peer peer)
    {
        requireNonNull(peer, "peer is null");
        if (!(peer instanceof UcxPeer ucxPeer) || ucxPeer.owner != this) {
            throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "peer " + peer + " was not connected by ucx transport '" + agentName + "'");
        }
        return ucxPeer;
    }

    private UcxPreparedList ownList(PreparedList list)
    {
        requireNonNull(list, "prepared list is null");
        if (!(list instanceof UcxPreparedList ucxList) || ucxList.owner != this) {
            throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "prepared list was not prepared by ucx transport '" + agentName + "'");
        }
        return ucxList;
    }

    private static String describe(String value)
    {
        return value.isEmpty() ? "(UCX default)" : value;
    }

    /** Runs an action on the owner thread and waits for its result. */
    private <T> T call(Supplier<T> action)
    {
        if (Thread.currentThread() == owner) {
            return action.get();
        }
        Command<T> command = new Command<>(action);
        commands.add(command);
        if (ownerExited) {
            failCommands();
        }
        wakeOwner();
        while (true) {
            try {
                return command.result.get(1, TimeUnit.SECONDS);
            }
            catch (TimeoutException e) {
                if (ownerExited) {
                    failCommands();
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new KvBridgeException(ErrorCode.CLOSED, "interrupted while waiting for ucx transport '" + agentName + "'");
            }
            catch (ExecutionException e) {
                if (e.getCause() instanceof KvBridgeException failure) {
                    throw failure;
                }
                if (e.getCause() instanceof Error error) {
                    throw error;
                }
                throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "ucx transport '" + agentName + "' failed: " + e.getCause(), e.getCause());
            }
        }
    }

    private void failCommands()
    {
        Command<?> command;
        while ((command = commands.poll()) != null) {
            command.result.completeExceptionally(new KvBridgeException(ErrorCode.CLOSED, "ucx transport '" + agentName + "' is closed"));
        }
    }

    private void wakeOwner()
    {
        if (sleeping) {
            wakeup.signal();
        }
    }

    // ---------------------------------------------------------------- owner thread

    private void run()
    {
        try {
            open();
        }
        catch (Throwable e) {
            releaseNative();
            ownerExited = true;
            started.completeExceptionally(e);
            return;
        }
        started.complete(null);
        try {
            loop();
        }
        catch (Throwable e) {
            ownerFailure = e;
            LOG.log(System.Logger.Level.ERROR, "ucx transport '" + agentName + "' stopped after an unexpected failure", e);
        }
        finally {
            try {
                shutdown();
            }
            catch (Throwable e) {
                LOG.log(System.Logger.Level.ERROR, "ucx transport '" + agentName + "' failed to shut down cleanly", e);
            }
            ownerExited = true;
            failCommands();
        }
    }

    private void open()
    {
        ownerArena = Arena.ofConfined();
        buffers = new NativeBuffers(ownerArena);
        rmaParam = Ucp.newRequestParam(ownerArena);
        emptyParam = Ucp.newRequestParam(ownerArena);
        tagInfo = Ucp.newTagInfo(ownerArena);
        wakeup = new WakeupFd();
        long config = Ucp.configRead(options.ucxOverrides());
        try {
            context = Ucp.init(config, Ucp.FEATURE_TAG | Ucp.FEATURE_RMA | Ucp.FEATURE_WAKEUP, agentName);
        }
        catch (KvBridgeException e) {
            if (!options.tls().isEmpty() || !options.netDevices().isEmpty() || !options.extraConfig().isEmpty()) {
                throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "UCX could not start with tls=" + describe(options.tls()) + " net-devices="
                        + describe(options.netDevices()) + " ucx-config=" + options.extraConfig() + ": " + e.getMessage()
                        + "; list what this host offers with ucx_info -d", e);
            }
            throw e;
        }
        finally {
            Ucp.configRelease(config);
        }
        version = Ucp.version();
        deviceMemory = (Ucp.memoryTypes(context) & Ucp.MEMORY_TYPE_CUDA_BIT) != 0;
        transports = UcxResources.transports(Ucp.contextInfo(context));
        worker = Ucp.workerCreate(context, agentName);
        workerFd = Ucp.workerEventFd(worker);
        workerAddress = Ucp.workerAddress(worker);
    }

    private void loop()
    {
        long spinNanos = TimeUnit.MICROSECONDS.toNanos(options.idleSpinMicros());
        long lastEvent = System.nanoTime();
        int quietRounds = 0;
        int rounds = 0;
        while (!stopRequested) {
            if (activeCount > 0 && (++rounds & 1023) == 0) {
                checkTransferDeadlines();
            }
            boolean busy = progressWhileBusy();
            busy |= receiveMessages();
            // posted transfers before commands: a deregister() or disconnect() that follows a post
            // finds the transfer issued and waits for it instead of failing it
            busy |= startPosted();
            busy |= runCommands();
            busy |= advanceTransfers();
            busy |= advanceSends();
            busy |= advanceRetiring();
            busy |= advanceSetups();
            if (busy) {
                lastEvent = System.nanoTime();
                quietRounds = 0;
                continue;
            }
            quietRounds++;
            if (activeCount > 0 || !pendingSends.isEmpty() || !retiring.isEmpty() || !setups.isEmpty() || receiveRequest != 0) {
                // waiting for UCX: keep progressing, but let other threads in now and then
                if ((quietRounds & 1023) == 0) {
                    Thread.yield();
                }
                else {
                    Thread.onSpinWait();
                }
                continue;
            }
            if (System.nanoTime() - lastEvent < spinNanos) {
                Thread.onSpinWait();
                continue;
            }
            sleep();
            lastEvent = System.nanoTime();
        }
    }

    /**
     * Progresses the worker until it reports no more events (at most a few dozen times): while data
     * streams, UCX then moves it back to back instead of between rounds of bookkeeping.
     */
    private boolean progressWhileBusy()
    {
        for (int round = 0; round < PROGRESS_BURST; round++) {
            if (Ucp.workerProgress(worker) == 0) {
                return round > 0;
            }
        }
        return true;
    }

    private void sleep()
    {
        sleeping = true;
        try {
            if (!commands.isEmpty() || stopRequested || hasPosted()) {
                return;
            }
            if (Ucp.workerArm(worker)) {
                wakeup.await(workerFd, SLEEP_MILLIS);
            }
        }
        finally {
            sleeping = false;
        }
    }

    private boolean hasPosted()
    {
        synchronized (postLock) {
            return postedHead != null;
        }
    }

    private boolean runCommands()
    {
        boolean ran = false;
        Command<?> command;
        while ((command = commands.poll()) != null) {
            command.run();
            ran = true;
        }
        return ran;
    }

    private boolean startPosted()
    {
        UcxTransfer transfer;
        synchronized (postLock) {
            transfer = postedHead;
            postedHead = null;
            postedTail = null;
        }
        if (transfer == null) {
            return false;
        }
        while (transfer != null) {
            UcxTransfer next = transfer.nextPosted;
            transfer.nextPosted = null;
            start(transfer);
            transfer = next;
        }
        return true;
    }

    private void start(UcxTransfer transfer)
    {
        UcxPeer peer = transfer.peer;
        String problem = null;
        if (transfer.cancelled) {
            problem = "it was released before it started";
        }
        else if (stopRequested) {
            problem = "the transport is closing";
        }
        else if (peer.unusable != null) {
            problem = "peer '" + peer.name + "' cannot be used: " + peer.unusable;
        }
        else {
            problem = transfer.localList.deadMemory();
            if (problem == null) {
                problem = transfer.remoteList.deadMemory();
            }
        }
        if (problem != null) {
            transfer.ownerFailure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " did not start: " + problem);
            finish(transfer);
            return;
        }
        issue(transfer);
    }

    private void issue(UcxTransfer transfer)
    {
        UcxPeer peer = transfer.peer;
        transfer.issued = true;
        peer.inFlight++;
        for (UcxRegistration registration : transfer.localList.registrations) {
            registration.inFlight++;
        }
        long endpoint = peer.endpoint;
        long param = rmaParam.address();
        boolean write = transfer.op == TransferOp.WRITE;
        long[] locals = transfer.localAddresses;
        long[] remotes = transfer.remoteAddresses;
        long[] lengths = transfer.lengths;
        long[] memoryHandles = transfer.memoryHandles;
        long[] remoteKeys = transfer.remoteKeys;
        long lastMemoryHandle = 0;
        for (int i = 0; i < transfer.operations; i++) {
            if (memoryHandles[i] != lastMemoryHandle) {
                lastMemoryHandle = memoryHandles[i];
                Ucp.setMemoryHandle(rmaParam, lastMemoryHandle);
            }
            long request = write
                    ? Ucp.putNbx(endpoint, locals[i], lengths[i], remotes[i], remoteKeys[i], param)
                    : Ucp.getNbx(endpoint, locals[i], lengths[i], remotes[i], remoteKeys[i], param);
            if (request != 0) {
                if (Ucp.isError(request)) {
                    transfer.failedStatus = Ucp.statusOf(request);
                    transfer.failedCall = write ? "ucp_put_nbx" : "ucp_get_nbx";
                    break;
                }
                // completion is observed through the flush below
                Ucp.requestFree(request);
            }
            if (i % PROGRESS_EVERY == PROGRESS_EVERY - 1) {
                Ucp.workerProgress(worker);
            }
        }
        // the flush also waits for operations issued before a failure, which still use the memory
        long flush = Ucp.epFlushNbx(endpoint, emptyParam);
        if (flush == 0) {
            afterFlush(transfer, Ucp.OK);
        }
        else if (Ucp.isError(flush)) {
            afterFlush(transfer, Ucp.statusOf(flush));
        }
        else {
            transfer.request = flush;
            transfer.phase = UcxTransfer.FLUSHING;
            addActive(transfer);
        }
    }

    private void afterFlush(UcxTransfer transfer, byte status)
    {
        if (status != Ucp.OK && transfer.failedCall == null) {
            transfer.failedStatus = status;
            transfer.failedCall = "ucp_ep_flush_nbx";
        }
        UcxPeer peer = transfer.peer;
        if (transfer.failedCall != null || transfer.cancelled || transfer.notificationLength < 0 || transfer.ownerFailure != null) {
            finish(transfer);
            return;
        }
        if (peer.failed || peer.endpoint == 0) {
            // the endpoint is closed or closing by force: nothing more can be sent to the peer
            transfer.ownerFailure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " moved its data but peer '"
                    + peer.name + "' became unusable before the notification was sent: " + peer.unusable);
            finish(transfer);
            return;
        }
        int length = senderHeader.length + transfer.notificationLength;
        MemorySegment buffer = buffers.take(length);
        MemorySegment.copy(senderHeader, 0, buffer, ValueLayout.JAVA_BYTE, 0, senderHeader.length);
        MemorySegment.copy(transfer.notification, 0, buffer, ValueLayout.JAVA_BYTE, senderHeader.length, transfer.notificationLength);
        long request = Ucp.tagSendNbx(peer.endpoint, buffer, length, TAG_NOTIFY, emptyParam);
        if (request == 0 || Ucp.isError(request)) {
            buffers.give(buffer);
            if (request != 0) {
                transfer.failedStatus = Ucp.statusOf(request);
                transfer.failedCall = "ucp_tag_send_nbx (notification)";
            }
            finish(transfer);
            return;
        }
        transfer.sendBuffer = buffer;
        transfer.request = request;
        if (transfer.phase == UcxTransfer.QUEUED) {
            addActive(transfer);
        }
        transfer.phase = UcxTransfer.NOTIFYING;
    }

    private boolean advanceTransfers()
    {
        boolean progressed = false;
        int i = 0;
        while (i < activeCount) {
            UcxTransfer transfer = active[i];
            byte status = Ucp.requestStatus(transfer.request);
            if (status == Ucp.IN_PROGRESS) {
                i++;
                continue;
            }
            Ucp.requestFree(transfer.request);
            transfer.request = 0;
            progressed = true;
            if (transfer.phase == UcxTransfer.FLUSHING) {
                afterFlush(transfer, status);
            }
            else {
                if (status != Ucp.OK && transfer.failedCall == null) {
                    transfer.failedStatus = status;
                    transfer.failedCall = "ucp_tag_send_nbx (notification)";
                }
                buffers.give(transfer.sendBuffer);
                transfer.sendBuffer = null;
                finish(transfer);
            }
            // afterFlush and finish may have removed the entry at i: re-examine the same index
            if (i < activeCount && active[i] == transfer) {
                i++;
            }
        }
        return progressed;
    }

    private void addActive(UcxTransfer transfer)
    {
        if (activeCount == active.length) {
            active = Arrays.copyOf(active, active.length * 2);
        }
        active[activeCount++] = transfer;
    }

    private void removeActive(UcxTransfer transfer)
    {
        for (int i = 0; i < activeCount; i++) {
            if (active[i] == transfer) {
                active[i] = active[--activeCount];
                active[activeCount] = null;
                return;
            }
        }
    }

    /** Ends a transfer that may be in the active set. */
    private void finish(UcxTransfer transfer)
    {
        if (transfer.phase != UcxTransfer.QUEUED) {
            removeActive(transfer);
        }
        finishIssued(transfer);
    }

    private void finishIssued(UcxTransfer transfer)
    {
        UcxPeer peer = transfer.peer;
        if (transfer.issued) {
            peer.inFlight--;
            for (UcxRegistration registration : transfer.localList.registrations) {
                registration.inFlight--;
                if (!registration.live && registration.inFlight == 0) {
                    unmap(registration);
                    unmapWhenIdle.remove(registration);
                }
            }
            if (!peer.retiredRegions.isEmpty()) {
                destroyRetiredKeys(peer);
            }
        }
        KvBridgeException failure = transfer.ownerFailure;
        if (failure == null && transfer.failedCall != null) {
            failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " failed: "
                    + Ucp.describeFailure(transfer.failedCall, transfer.failedStatus)
                    + (peer.unusable != null ? "; peer '" + peer.name + "' is unusable: " + peer.unusable : ""),
                    Ucp.error(transfer.failedCall, transfer.failedStatus));
        }
        if (failure == null && transfer.cancelled) {
            failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " was released before it finished");
        }
        synchronized (slotLock) {
            transfer.clearReferences();
            transfer.failure = failure;
            transfer.status = failure == null ? TransferStatus.DONE : TransferStatus.FAILED;
            if (transfer.released) {
                recycleLocked(transfer);
            }
        }
        wakeWaiter();
    }

    private void wakeWaiter()
    {
        Thread waiter = progressWaiter;
        if (waiter != null) {
            LockSupport.unpark(waiter);
        }
    }

    private String describe(UcxTransfer transfer)
    {
        return String.format(Locale.ROOT, "%s of %d descriptor pairs in %d operations (%d bytes) %s peer '%s'", transfer.op, transfer.pairs,
                transfer.operations, transfer.bytes,
                transfer.op == TransferOp.WRITE ? "to" : "from", transfer.peer.name);
    }

    private void checkTransferDeadlines()
    {
        if (options.transferTimeoutMillis() == 0) {
            return;
        }
        long now = System.nanoTime();
        long limit = TimeUnit.MILLISECONDS.toNanos(options.transferTimeoutMillis());
        for (int i = 0; i < activeCount; i++) {
            UcxTransfer transfer = active[i];
            if (transfer.ownerFailure == null && now - transfer.postedNanos > limit) {
                // RMA operations cannot be cancelled one by one: closing the endpoint by force
                // completes them, which frees the transfer's memory for reuse
                transfer.ownerFailure = new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, describe(transfer) + " did not finish within "
                        + UcxOptions.TRANSFER_TIMEOUT_MS + "=" + options.transferTimeoutMillis() + "; its peer is treated as dead");
                markFailed(transfer.peer, "a transfer did not finish within " + UcxOptions.TRANSFER_TIMEOUT_MS + "=" + options.transferTimeoutMillis());
            }
        }
    }

    private boolean advanceSends()
    {
        boolean progressed = false;
        for (int i = pendingSends.size() - 1; i >= 0; i--) {
            PendingSend send = pendingSends.get(i);
            byte status = Ucp.requestStatus(send.request());
            if (status == Ucp.IN_PROGRESS) {
                continue;
            }
            Ucp.requestFree(send.request());
            buffers.give(send.buffer());
            send.peer().pendingSends--;
            pendingSends.remove(i);
            progressed = true;
            if (status != Ucp.OK && status != Ucp.ERR_CANCELED) {
                LOG.log(System.Logger.Level.DEBUG, "{0} to peer ''{1}'' failed: {2}", send.what(), send.peer().name, Ucp.statusString(status));
            }
        }
        return progressed;
    }

    private boolean receiveMessages()
    {
        boolean received = false;
        if (receiveRequest != 0) {
            byte status = Ucp.requestStatus(receiveRequest);
            if (status == Ucp.IN_PROGRESS) {
                return false;
            }
            Ucp.requestFree(receiveRequest);
            receiveRequest = 0;
            if (status == Ucp.OK) {
                deliver(receiveTag, receiveBuffer, receiveLength);
            }
            releaseReceiveBuffer();
            received = true;
        }
        for (int n = 0; n < 64; n++) {
            long message = Ucp.tagProbe(worker, TAG_PREFIX, TAG_PREFIX_MASK, tagInfo);
            if (message == 0) {
                break;
            }
            received = true;
            receiveTag = Ucp.tagInfoSenderTag(tagInfo);
            receiveLength = Ucp.tagInfoLength(tagInfo);
            if (receiveLength <= NativeBuffers.MAX_BYTES) {
                receiveBuffer = buffers.take(receiveLength);
            }
            else {
                // larger than any message kvbridge sends: receive it to drain UCX, then drop it
                receiveArena = Arena.ofConfined();
                receiveBuffer = receiveArena.allocate(Math.min(receiveLength, RECEIVE_LIMIT_BYTES));
            }
            long request = Ucp.tagMsgRecvNbx(worker, receiveBuffer, Math.min(receiveLength, receiveBuffer.byteSize()), message, emptyParam);
            if (request != 0 && !Ucp.isError(request)) {
                // finish this message before probing the next: notifications keep their arrival order
                receiveRequest = request;
                break;
            }
            if (request == 0) {
                deliver(receiveTag, receiveBuffer, receiveLength);
            }
            else {
                LOG.log(System.Logger.Level.WARNING, "receiving a message on ''{0}'' failed: {1}", agentName, Ucp.statusString(Ucp.statusOf(request)));
            }
            releaseReceiveBuffer();
        }
        return received;
    }

    private void releaseReceiveBuffer()
    {
        if (receiveArena != null) {
            receiveArena.close();
            receiveArena = null;
        }
        else if (receiveBuffer != null) {
            buffers.give(receiveBuffer);
        }
        receiveBuffer = null;
    }

    /** Handles a message from a peer; its bytes are untrusted. */
    private void deliver(long tag, MemorySegment buffer, long length)
    {
        if (length < 10 || length > NativeBuffers.MAX_BYTES) {
            LOG.log(System.Logger.Level.WARNING, "''{0}'' dropped a malformed message: length={1}", agentName, length);
            return;
        }
        long sender = buffer.get(WIRE_LONG, 0);
        int nameLength = Short.toUnsignedInt(buffer.get(WIRE_SHORT, 8));
        if (nameLength == 0 || 10 + nameLength > length) {
            LOG.log(System.Logger.Level.WARNING, "''{0}'' dropped a malformed message: name length={1} in {2} bytes", agentName, nameLength, length);
            return;
        }
        String name = new String(buffer.asSlice(10, nameLength).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        if (tag == TAG_NOTIFY) {
            inbox.add(new Inbound(name, buffer.asSlice(10 + nameLength, length - 10 - nameLength).toArray(ValueLayout.JAVA_BYTE)));
            wakeWaiter();
        }
        else if (tag == TAG_BYE) {
            List<UcxPeer> closing = new ArrayList<>();
            for (UcxPeer peer : peersByToken.values()) {
                if (peer.instanceId == sender) {
                    closing.add(peer);
                }
            }
            for (UcxPeer peer : closing) {
                markFailed(peer, "the peer closed");
            }
        }
        else {
            LOG.log(System.Logger.Level.WARNING, "''{0}'' dropped a message with unknown tag 0x{1}", agentName, Long.toHexString(tag));
        }
    }

    // ---------------------------------------------------------------- retiring endpoints

    /** Starts closing a peer's endpoint once its in-flight work is done or its deadline passed. */
    private void retire(UcxPeer peer)
    {
        if (!peer.retiring) {
            peer.retiring = true;
            peer.retireDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis());
            retiring.add(peer);
        }
    }

    private boolean advanceRetiring()
    {
        boolean progressed = false;
        for (int i = retiring.size() - 1; i >= 0; i--) {
            UcxPeer peer = retiring.get(i);
            if (advanceRetiring(peer)) {
                retiring.remove(i);
                progressed = true;
            }
        }
        return progressed;
    }

    /** Moves one retiring peer along; true once everything of it is released. */
    private boolean advanceRetiring(UcxPeer peer)
    {
        long now = System.nanoTime();
        boolean drained = peer.inFlight == 0 && peer.pendingSends == 0;
        if (peer.retireStage == 0) {
            if (!drained && !peer.failed && now - peer.retireDeadlineNanos < 0) {
                return false;
            }
            if (drained) {
                // UCX's order: keys after the operations using them, before their endpoint
                destroyAllKeys(peer);
            }
            peersByToken.remove(peer.token);
            // a healthy, drained endpoint closes gracefully; otherwise outstanding operations are
            // cancelled, which completes their requests
            long request = Ucp.epCloseNbx(peer.endpoint, peer.failed || !drained, peer.token);
            peer.endpoint = 0;
            peer.retireStage = 1;
            peer.closeRequest = request != 0 && !Ucp.isError(request) ? request : 0;
            peer.retireDeadlineNanos = now + TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis());
        }
        if (peer.closeRequest != 0) {
            byte status = Ucp.requestStatus(peer.closeRequest);
            if (status == Ucp.IN_PROGRESS && now - peer.retireDeadlineNanos < 0) {
                return false;
            }
            // past the deadline the request is freed in flight; destroying the worker ends it
            Ucp.requestFree(peer.closeRequest);
            peer.closeRequest = 0;
        }
        if (!drained && now - peer.retireDeadlineNanos < 0) {
            return false;
        }
        destroyAllKeys(peer);
        return true;
    }

    private static void destroyAllKeys(UcxPeer peer)
    {
        for (UcxRemoteRegion region : peer.regions) {
            region.live = false;
            destroyKey(region);
        }
        for (UcxRemoteRegion region : peer.retiredRegions) {
            destroyKey(region);
        }
        peer.retiredRegions.clear();
    }

    // ---------------------------------------------------------------- shutdown

    private void shutdown()
    {
        if (worker == 0) {
            releaseNative();
            return;
        }
        failCommands();
        UcxTransfer queued;
        synchronized (postLock) {
            queued = postedHead;
            postedHead = null;
            postedTail = null;
        }
        while (queued != null) {
            UcxTransfer next = queued.nextPosted;
            queued.nextPosted = null;
            queued.ownerFailure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(queued) + " did not start: the transport was closed");
            finish(queued);
            queued = next;
        }
        // tell every peer we can reach that we are going, so its transfers to us fail instead of hanging
        List<UcxPeer> all = new ArrayList<>(peersByToken.values());
        for (UcxPeer peer : all) {
            if (!peer.failed && peer.endpoint != 0) {
                try {
                    send(peer, TAG_BYE, new byte[0], 0, "goodbye");
                }
                catch (KvBridgeException e) {
                    LOG.log(System.Logger.Level.DEBUG, "goodbye to ''{0}'' failed: {1}", peer.name, e.getMessage());
                }
            }
            retire(peer);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis());
        while (activeCount > 0 || !pendingSends.isEmpty() || !retiring.isEmpty() || !setups.isEmpty()) {
            Ucp.workerProgress(worker);
            receiveMessages();
            advanceTransfers();
            advanceSends();
            advanceRetiring();
            advanceSetups();
            if (System.nanoTime() - deadline > 0) {
                for (UcxPeer peer : new ArrayList<>(retiring)) {
                    peer.failed = true;
                    peer.retireDeadlineNanos = deadline;
                }
                if (System.nanoTime() - deadline > TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis())) {
                    break;
                }
            }
            Thread.onSpinWait();
        }
        // whatever UCX did not complete in time is abandoned here; destroying the worker ends it
        while (activeCount > 0) {
            UcxTransfer transfer = active[0];
            if (transfer.request != 0) {
                Ucp.requestFree(transfer.request);
                transfer.request = 0;
            }
            if (transfer.sendBuffer != null) {
                buffers.give(transfer.sendBuffer);
                transfer.sendBuffer = null;
            }
            transfer.ownerFailure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, describe(transfer) + " was cut off: the transport was closed");
            finish(transfer);
        }
        for (PendingSend send : pendingSends) {
            Ucp.requestFree(send.request());
        }
        pendingSends.clear();
        if (receiveRequest != 0) {
            Ucp.requestFree(receiveRequest);
            receiveRequest = 0;
        }
        for (Setup setup : setups) {
            Ucp.requestFree(setup.request());
            setup.answered().completeExceptionally(new KvBridgeException(ErrorCode.CLOSED, "ucx transport '" + agentName
                    + "' was closed while connecting to peer '" + setup.peer().name + "'"));
        }
        setups.clear();
        for (UcxPeer peer : retiring) {
            if (peer.endpoint != 0) {
                Ucp.epCloseNbx(peer.endpoint, true, peer.token);
                peer.endpoint = 0;
            }
            destroyAllKeys(peer);
        }
        retiring.clear();
        // UCX 1.13 aborts the process when a worker is destroyed while it still owes a peer that is
        // connecting to it a reply: let such replies go out first
        if (!flushWorker(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis()))) {
            LOG.log(System.Logger.Level.DEBUG, "''{0}'': the worker did not flush within {1} ms (a peer is gone or not answering); destroying it anyway",
                    agentName, options.closeTimeoutMillis());
        }
        for (UcxRegistration registration : registrations) {
            registration.live = false;
            unmap(registration);
        }
        for (UcxRegistration registration : unmapWhenIdle) {
            unmap(registration);
        }
        unmapWhenIdle.clear();
        releaseNative();
    }

    /**
     * Flushes the worker, which includes connections UCX is still setting up for peers that connected
     * to this one; false when that did not end in time.
     */
    private boolean flushWorker(long deadlineNanos)
    {
        long request = Ucp.workerFlushNbx(worker, emptyParam);
        if (request == 0 || Ucp.isError(request)) {
            return true;
        }
        while (Ucp.requestStatus(request) == Ucp.IN_PROGRESS) {
            if (System.nanoTime() - deadlineNanos > 0) {
                Ucp.requestFree(request);
                return false;
            }
            Ucp.workerProgress(worker);
            Thread.onSpinWait();
        }
        Ucp.requestFree(request);
        return true;
    }

    /** Destroys the worker and context and frees owner memory; safe after a partial start. */
    private void releaseNative()
    {
        if (worker != 0) {
            Ucp.workerDestroy(worker);
            worker = 0;
        }
        if (context != 0) {
            Ucp.cleanup(context);
            context = 0;
        }
        if (receiveArena != null) {
            receiveArena.close();
            receiveArena = null;
        }
        if (ownerArena != null) {
            ownerArena.close();
            ownerArena = null;
        }
        if (wakeup != null) {
            wakeup.close();
        }
    }

    @Override
    public String toString()
    {
        return "UcxTransferBackend[" + agentName + ", tls=" + describe(options.tls()) + "]";
    }
}
