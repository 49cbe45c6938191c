package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.LockSupport;

/**
 * A deliberately simple in-JVM transport for tests of modules that cannot use the core's
 * {@code local} transport, with switchable {@link Defect}s that show the conformance suite catches
 * each kind of broken transport. One lock guards everything; one thread copies. It coalesces
 * ({@link Capability#COALESCING}), so the suite's coalescing tests have a reference to run on.
 */
public final class TestingTransferBackendFactory implements TransferBackendFactory
{
    /** Ways to break the transport on purpose. */
    public enum Defect
    {
        /** Delivers a transfer's notification when it is posted, before the bytes move. */
        NOTIFY_BEFORE_DATA,
        /** Accepts descriptors outside registered memory. */
        SKIP_RANGE_CHECK,
        /** Copies one byte less than each descriptor's length. */
        SHORT_COPY,
        /** Never delivers notifications attached to transfers. */
        DROP_NOTIFICATIONS,
        /** Keeps registrations and handles when closed. */
        LEAK_ON_CLOSE,
        /** Merges contiguous pairs even where they cross from one registration into the next. */
        MERGE_ACROSS_REGISTRATIONS,
        /** Merges pairs contiguous on the local side only, as if the remote side were too. */
        MERGE_ONE_SIDED,
        /** Merges correctly but reports one operation per pair. */
        MISCOUNT_OPERATIONS,
        /** Promises to wake a waiting thread but never does. */
        NO_WAKE_UPS
    }

    private static final MemorySegment ALL_MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
    private static final Map<String, Instance> INSTANCES = new ConcurrentHashMap<>();

    private final Set<Defect> defects;

    /** Creates a correct transport. */
    public TestingTransferBackendFactory()
    {
        this(Set.of());
    }

    /**
     * Creates a transport with defects.
     *
     * @param defects what to break.
     */
    public TestingTransferBackendFactory(Set<Defect> defects)
    {
        this.defects = defects.isEmpty() ? EnumSet.noneOf(Defect.class) : EnumSet.copyOf(defects);
    }

    @Override
    public String name()
    {
        return "testing";
    }

    @Override
    public int spiVersion()
    {
        return Spi.VERSION;
    }

    @Override
    public Availability probe()
    {
        return Availability.available(EnumSet.of(Capability.HOST_MEMORY, Capability.COALESCING), Map.of("defects", defects.toString()));
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        new PluginConfig(name(), config).finish();
        return new Instance(context.agentName(), defects);
    }

    private record Remote(String name, Instance owner, Instance target) implements Peer
    {
    }

    // regions[i]: index in within of the allocation holding descriptor i (-1 when unchecked)
    private record Prepared(Instance owner, Remote peer, long[] addresses, long[] lengths, int[] regions, List<Allocation> within)
            implements PreparedList
    {
        @Override
        public int size()
        {
            return addresses.length;
        }

        @Override
        public MemoryKind kind()
        {
            return MemoryKind.HOST;
        }
    }

    private static final class Job
    {
        TransferStatus status = TransferStatus.IN_PROGRESS;
        KvBridgeException failure;
        int operations;
    }

    private static final class Instance implements TransferBackend
    {
        private final String agentName;
        private final Set<Defect> defects;
        private final ExecutorService copier;
        private final List<Allocation> registered = new ArrayList<>();
        private final List<Prepared> prepared = new ArrayList<>();
        private final List<Remote> peers = new ArrayList<>();
        private final Map<Long, Job> jobs = new HashMap<>();
        private final ConcurrentLinkedQueue<Object[]> inbox = new ConcurrentLinkedQueue<>();
        private volatile Thread waiter;
        private long nextHandle = 1;
        private boolean closed;

        Instance(String agentName, Set<Defect> defects)
        {
            this.agentName = agentName;
            this.defects = defects;
            this.copier = Executors.newSingleThreadExecutor(runnable -> Thread.ofPlatform().daemon().name("testing-copy-" + agentName).unstarted(runnable));
            INSTANCES.put(agentName, this);
        }

        @Override
        public String name()
        {
            return "testing";
        }

        @Override
        public String agentName()
        {
            return agentName;
        }

        @Override
        public synchronized void register(Allocation allocation)
        {
            checkOpen();
            for (Allocation existing : registered) {
                if (existing.overlaps(allocation)) {
                    throw new KvBridgeException(ErrorCode.ALREADY_REGISTERED, allocation + " overlaps " + existing);
                }
            }
            registered.add(allocation);
        }

        @Override
        public synchronized void deregister(Allocation allocation)
        {
            checkOpen();
            if (!registered.remove(allocation)) {
                throw new KvBridgeException(ErrorCode.NOT_REGISTERED, allocation + " is not registered");
            }
        }

        @Override
        public synchronized void copyFromHost(MemorySegment source, Allocation destination, long offset)
        {
            hostCopyTarget(destination, offset, source).copyFrom(source);
        }

        @Override
        public synchronized void copyToHost(Allocation source, long offset, MemorySegment destination)
        {
            destination.copyFrom(hostCopyTarget(source, offset, destination));
        }

        private MemorySegment hostCopyTarget(Allocation allocation, long offset, MemorySegment host)
        {
            checkOpen();
            KvBridgeException.checkArgument(host.isNative(), "the host segment is on the Java heap");
            KvBridgeException.checkArgument(offset >= 0, "offset=%d is negative", offset);
            if (host.byteSize() > allocation.bytes() - offset) {
                throw new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, host.byteSize() + " bytes at offset " + offset + " run past " + allocation);
            }
            long start = allocation.address() + offset;
            for (Allocation existing : registered) {
                if (existing.kind() == allocation.kind() && existing.device() == allocation.device() && existing.contains(start, host.byteSize())) {
                    return MemorySegment.ofAddress(start).reinterpret(host.byteSize());
                }
            }
            throw new KvBridgeException(ErrorCode.NOT_REGISTERED, allocation + " is not registered");
        }

        @Override
        public synchronized byte[] localMetadata()
        {
            checkOpen();
            return agentName.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }

        @Override
        public synchronized Peer connect(byte[] peerMetadata)
        {
            checkOpen();
            Instance target = INSTANCES.get(new String(peerMetadata, java.nio.charset.StandardCharsets.UTF_8));
            if (target == null) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "no testing instance for that metadata");
            }
            Remote peer = new Remote(target.agentName, this, target);
            peers.add(peer);
            return peer;
        }

        @Override
        public synchronized void disconnect(Peer peer)
        {
            peers.remove(ownPeer(peer));
        }

        @Override
        public synchronized PreparedList prepareLocal(DescriptorList descriptors)
        {
            checkOpen();
            return prepare(null, registered, descriptors);
        }

        @Override
        public synchronized PreparedList prepareRemote(Peer peer, DescriptorList descriptors)
        {
            checkOpen();
            Remote remote = ownPeer(peer);
            List<Allocation> targetMemory;
            synchronized (remote.target) {
                if (remote.target.closed) {
                    throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer " + peer.name() + " is closed");
                }
                targetMemory = List.copyOf(remote.target.registered);
            }
            return prepare(remote, targetMemory, descriptors);
        }

        private Prepared prepare(Remote peer, List<Allocation> memory, DescriptorList descriptors)
        {
            List<Allocation> within = new ArrayList<>();
            int[] regions = new int[descriptors.size()];
            for (int i = 0; i < descriptors.size(); i++) {
                long address = descriptors.address(i);
                long length = descriptors.length(i);
                Optional<Allocation> owner = memory.stream().filter(a -> a.contains(address, length)).findFirst();
                if (owner.isEmpty() && !defects.contains(Defect.SKIP_RANGE_CHECK)) {
                    throw new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, "descriptor " + i + " is outside registered memory");
                }
                owner.filter(a -> !within.contains(a)).ifPresent(within::add);
                regions[i] = owner.map(within::indexOf).orElse(-1);
            }
            Prepared list = new Prepared(this, peer, descriptors.addresses(), descriptors.lengths(), regions, within);
            prepared.add(list);
            return list;
        }

        @Override
        public synchronized void releasePrepared(PreparedList list)
        {
            prepared.remove(ownList(list));
        }

        @Override
        public synchronized long post(TransferRequest request)
        {
            checkOpen();
            TransferOp op = request.op();
            Prepared local = ownList(request.local());
            Prepared remote = ownList(request.remote());
            int[] localIndices = request.localIndices();
            int[] remoteIndices = request.remoteIndices();
            int count = request.count();
            byte[] notification = request.notification();
            if (count > localIndices.length || count > remoteIndices.length) {
                throw new KvBridgeException(ErrorCode.LENGTH_MISMATCH, "count exceeds the index arrays");
            }
            if (!registered.containsAll(local.within)) {
                throw new KvBridgeException(ErrorCode.NOT_REGISTERED, "local memory was deregistered");
            }
            // runs of {local address, remote address, length, local region, remote region}
            List<long[]> runs = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                int l = localIndices[i];
                int r = remoteIndices[i];
                if (l < 0 || l >= local.size() || r < 0 || r >= remote.size()) {
                    throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, "pair " + i + " index out of range");
                }
                if (local.lengths[l] != remote.lengths[r]) {
                    throw new KvBridgeException(ErrorCode.LENGTH_MISMATCH, "pair " + i + " lengths differ");
                }
                long[] last = runs.isEmpty() ? null : runs.getLast();
                if (last != null && continues(last, local.addresses[l], local.regions[l], remote.addresses[r], remote.regions[r])) {
                    last[2] += local.lengths[l];
                }
                else {
                    runs.add(new long[] {local.addresses[l], remote.addresses[r], local.lengths[l], local.regions[l], remote.regions[r]});
                }
            }
            boolean write = op == TransferOp.WRITE;
            List<long[]> pairs = new ArrayList<>();
            for (long[] run : runs) {
                pairs.add(new long[] {write ? run[0] : run[1], write ? run[1] : run[0], run[2]});
            }
            long handle = nextHandle++;
            Job job = new Job();
            job.operations = defects.contains(Defect.MISCOUNT_OPERATIONS) ? count : runs.size();
            jobs.put(handle, job);
            Instance target = remote.peer.target;
            byte[] message = notification == null ? null : notification.clone();
            if (message != null && defects.contains(Defect.NOTIFY_BEFORE_DATA)) {
                target.inbox.add(new Object[] {agentName, message});
                target.wake();
            }
            copier.execute(() -> copy(job, target, pairs, message));
            return handle;
        }

        private boolean continues(long[] run, long localAddress, int localRegion, long remoteAddress, int remoteRegion)
        {
            boolean localContinues = run[0] + run[2] == localAddress;
            if (defects.contains(Defect.MERGE_ONE_SIDED)) {
                return localContinues;
            }
            boolean sameRegions = run[3] == localRegion && run[4] == remoteRegion;
            return localContinues && run[1] + run[2] == remoteAddress && (sameRegions || defects.contains(Defect.MERGE_ACROSS_REGISTRATIONS));
        }

        private void copy(Job job, Instance target, List<long[]> pairs, byte[] message)
        {
            if (defects.contains(Defect.NOTIFY_BEFORE_DATA)) {
                pause();
            }
            boolean targetOpen;
            synchronized (target) {
                targetOpen = !target.closed;
            }
            if (targetOpen) {
                long shortBy = defects.contains(Defect.SHORT_COPY) ? 1 : 0;
                for (long[] pair : pairs) {
                    MemorySegment.copy(ALL_MEMORY, pair[0], ALL_MEMORY, pair[1], pair[2] - shortBy);
                }
                if (message != null && !defects.contains(Defect.NOTIFY_BEFORE_DATA) && !defects.contains(Defect.DROP_NOTIFICATIONS)) {
                    target.inbox.add(new Object[] {agentName, message});
                    target.wake();
                }
            }
            synchronized (this) {
                job.status = targetOpen ? TransferStatus.DONE : TransferStatus.FAILED;
                job.failure = targetOpen ? null : new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer closed");
            }
            wake();
        }

        private void wake()
        {
            Thread thread = waiter;
            if (thread != null && !defects.contains(Defect.NO_WAKE_UPS)) {
                LockSupport.unpark(thread);
            }
        }

        @Override
        public boolean wakeOnProgress(Thread thread)
        {
            waiter = thread;
            return true;
        }

        private static void pause()
        {
            try {
                Thread.sleep(100);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public synchronized TransferStatus status(long handle)
        {
            return job(handle).status;
        }

        @Override
        public synchronized int operations(long handle)
        {
            return job(handle).operations;
        }

        @Override
        public synchronized Optional<KvBridgeException> failure(long handle)
        {
            return Optional.ofNullable(job(handle).failure);
        }

        @Override
        public synchronized void release(long handle)
        {
            job(handle);
            jobs.remove(handle);
        }

        @Override
        public synchronized void notify(Peer peer, byte[] message)
        {
            checkOpen();
            Instance target = ownPeer(peer).target;
            target.inbox.add(new Object[] {agentName, message.clone()});
            target.wake();
        }

        @Override
        public int drainNotifications(NotificationSink sink)
        {
            int drained = 0;
            Object[] entry;
            while ((entry = inbox.poll()) != null) {
                sink.accept((String) entry[0], (byte[]) entry[1]);
                drained++;
            }
            return drained;
        }

        @Override
        public synchronized BackendResources resources()
        {
            return new BackendResources(registered.size(), prepared.size(), peers.size(), jobs.size());
        }

        @Override
        public synchronized Optional<String> problem()
        {
            return closed ? Optional.of("testing transport '" + agentName + "' is closed") : Optional.empty();
        }

        @Override
        public void close()
        {
            synchronized (this) {
                if (closed) {
                    return;
                }
                closed = true;
                if (!defects.contains(Defect.LEAK_ON_CLOSE)) {
                    registered.clear();
                    prepared.clear();
                    peers.clear();
                    jobs.clear();
                }
            }
            copier.shutdownNow();
            INSTANCES.remove(agentName, this);
        }

        private Job job(long handle)
        {
            Job job = jobs.get(handle);
            if (job == null) {
                throw new KvBridgeException(ErrorCode.HANDLE_UNKNOWN, "handle " + handle + " is unknown or released");
            }
            return job;
        }

        private Remote ownPeer(Peer peer)
        {
            requireNonNull(peer, "peer is null");
            if (!(peer instanceof Remote remote) || remote.owner != this) {
                throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "peer of another instance");
            }
            return remote;
        }

        private Prepared ownList(PreparedList list)
        {
            requireNonNull(list, "list is null");
            if (!(list instanceof Prepared prepared) || prepared.owner != this) {
                throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "list of another instance");
            }
            return prepared;
        }

        private void checkOpen()
        {
            if (closed) {
                throw new KvBridgeException(ErrorCode.CLOSED, agentName + " is closed");
            }
        }
    }
}
