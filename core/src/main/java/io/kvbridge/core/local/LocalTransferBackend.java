package io.kvbridge.core.local;

import static java.util.Objects.requireNonNull;

import io.kvbridge.transport.DescriptorPairs;
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
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded transport: peers in the same JVM, bytes moved by {@link MemorySegment#copy} on the
 * instance's own copy threads, with the same asynchronous contract as a network transport. It is
 * the reference every other transport is tested against.
 *
 * <p>A post resolves its pairs into copies, merging runs contiguous on both sides within one
 * registration on each side ({@link io.kvbridge.spi.transfer.Capability#COALESCING}). A transfer
 * of more than 1 MiB is split by bytes into at most {@code copy-threads} contiguous parts, one per
 * copy thread; the thread that finishes the last part delivers the notification, so it always
 * follows the data.
 */
final class LocalTransferBackend implements TransferBackend
{
    private static final Logger LOG = LoggerFactory.getLogger(LocalTransferBackend.class);

    // one segment spanning the address space: copies address memory by absolute offset, so moving a
    // descriptor creates no segment object
    private static final MemorySegment ALL_MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
    private static final LocalTransfer STOP = new LocalTransfer(-1);
    // transfers smaller than this are not split: waking a second thread costs more than it saves
    private static final long SPLIT_THRESHOLD_BYTES = 1 << 20;

    private final String agentName;
    private final boolean simulateDevice;
    private final int maxInFlight;
    private final Thread[] copyThreads;
    private final List<ArrayBlockingQueue<LocalTransfer>> queues;
    private final ConcurrentLinkedQueue<Inbound> inbox = new ConcurrentLinkedQueue<>();
    // unparked whenever a transfer ends or a notification arrives
    private volatile Thread progressWaiter;
    private final AtomicBoolean closed = new AtomicBoolean();

    // registrations sorted by address, replaced on change, read without locking
    private volatile LocalRegistration[] registrations = new LocalRegistration[0];
    private final Object registrationLock = new Object();

    private final Object slotLock = new Object();
    private LocalTransfer[] slots = new LocalTransfer[64];
    private int slotCount;
    private int[] freeSlots = new int[64];
    private int freeCount;
    private int inFlight;

    private final List<LocalPeer> peers = new ArrayList<>();
    private final List<LocalPreparedList> preparedLists = new ArrayList<>();

    private record Inbound(String sender, byte[] message)
    {
    }

    LocalTransferBackend(String agentName, int copyThreadCount, boolean simulateDevice, int maxInFlight)
    {
        this.agentName = requireNonNull(agentName, "agentName is null");
        this.simulateDevice = simulateDevice;
        this.maxInFlight = maxInFlight;
        this.copyThreads = new Thread[copyThreadCount];
        List<ArrayBlockingQueue<LocalTransfer>> threadQueues = new ArrayList<>();
        for (int i = 0; i < copyThreadCount; i++) {
            threadQueues.add(new ArrayBlockingQueue<>(maxInFlight + 1));
        }
        this.queues = List.copyOf(threadQueues);
        LocalFabric.INSTANCE.add(this);
        for (int i = 0; i < copyThreadCount; i++) {
            int part = i;
            copyThreads[i] = Thread.ofPlatform().daemon().name("kvbridge-local-" + agentName + "-copy-" + i).start(() -> copyLoop(part));
        }
    }

    @Override
    public String name()
    {
        return LocalBackendFactory.NAME;
    }

    @Override
    public String agentName()
    {
        return agentName;
    }

    boolean closed()
    {
        return closed.get();
    }

    @Override
    public void register(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        checkOpen();
        if (allocation.kind() == MemoryKind.DEVICE && !simulateDevice) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "local moves host memory only, got " + allocation
                    + "; use a device transport, or set simulate-device=true to test device paths with host-backed memory");
        }
        synchronized (registrationLock) {
            LocalRegistration[] current = registrations;
            for (LocalRegistration registration : current) {
                if (registration.allocation.address() < allocation.end() && allocation.address() < registration.allocation.end()) {
                    throw new KvBridgeException(ErrorCode.ALREADY_REGISTERED, allocation + " overlaps registered " + registration.allocation
                            + "; register each physical range once");
                }
            }
            LocalRegistration[] next = Arrays.copyOf(current, current.length + 1);
            next[current.length] = new LocalRegistration(allocation);
            Arrays.sort(next, (a, b) -> Long.compare(a.allocation.address(), b.allocation.address()));
            registrations = next;
        }
    }

    @Override
    public void deregister(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        checkOpen();
        synchronized (registrationLock) {
            LocalRegistration[] current = registrations;
            for (int i = 0; i < current.length; i++) {
                if (current[i].allocation.equals(allocation)) {
                    current[i].live = false;
                    LocalRegistration[] next = new LocalRegistration[current.length - 1];
                    System.arraycopy(current, 0, next, 0, i);
                    System.arraycopy(current, i + 1, next, i, current.length - i - 1);
                    registrations = next;
                    return;
                }
            }
        }
        throw new KvBridgeException(ErrorCode.NOT_REGISTERED, allocation + " is not registered with local transport '" + agentName + "'");
    }

    /** Finds the live registration containing a range, or null. */
    LocalRegistration registrationOf(long address, long length, MemoryKind kind, int device)
    {
        LocalRegistration[] current = registrations;
        int low = 0;
        int high = current.length - 1;
        while (low <= high) {
            int middle = (low + high) >>> 1;
            if (current[middle].allocation.address() <= address) {
                low = middle + 1;
            }
            else {
                high = middle - 1;
            }
        }
        if (high < 0) {
            return null;
        }
        Allocation candidate = current[high].allocation;
        return candidate.kind() == kind && candidate.device() == device && candidate.contains(address, length) ? current[high] : null;
    }

    @Override
    public byte[] localMetadata()
    {
        checkOpen();
        return LocalFabric.INSTANCE.metadata(agentName);
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        checkOpen();
        LocalTransferBackend target = LocalFabric.INSTANCE.resolve(peerMetadata);
        synchronized (peers) {
            for (LocalPeer peer : peers) {
                if (peer.target == target && peer.connected) {
                    return peer;
                }
            }
            LocalPeer peer = new LocalPeer(this, target);
            peers.add(peer);
            return peer;
        }
    }

    @Override
    public void disconnect(Peer peer)
    {
        LocalPeer local = ownPeer(peer);
        local.connected = false;
        synchronized (peers) {
            peers.remove(local);
        }
    }

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        checkOpen();
        return prepare(null, this, descriptors);
    }

    @Override
    public PreparedList prepareRemote(Peer peer, DescriptorList descriptors)
    {
        checkOpen();
        LocalPeer local = ownPeer(peer);
        if (!local.usable()) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peer.name() + "' was disconnected or closed");
        }
        return prepare(local, local.target, descriptors);
    }

    private PreparedList prepare(LocalPeer peer, LocalTransferBackend memoryOwner, DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        if (descriptors.kind() == MemoryKind.DEVICE && !memoryOwner.simulateDevice) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "device descriptors given but local transport '" + memoryOwner.agentName
                    + "' moves host memory only (simulate-device=false)");
        }
        long[] addresses = descriptors.addresses();
        long[] lengths = descriptors.lengths();
        int[] registrationIds = new int[addresses.length];
        IdentityHashMap<LocalRegistration, Integer> ids = new IdentityHashMap<>();
        List<LocalRegistration> used = new ArrayList<>();
        LocalRegistration last = null;
        int lastId = -1;
        for (int i = 0; i < addresses.length; i++) {
            // consecutive descriptors usually share an allocation: test the last one before searching
            if (last == null || !last.allocation.contains(addresses[i], lengths[i])) {
                last = memoryOwner.registrationOf(addresses[i], lengths[i], descriptors.kind(), descriptors.device());
                if (last == null) {
                    throw new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                            "descriptor %d (address=0x%x, length=%d, %s device %d) lies outside every allocation registered with '%s'; register the memory first",
                            i, addresses[i], lengths[i], descriptors.kind(), descriptors.device(), memoryOwner.agentName));
                }
                LocalRegistration found = last;
                lastId = ids.computeIfAbsent(found, ignored -> {
                    used.add(found);
                    return used.size() - 1;
                });
            }
            registrationIds[i] = lastId;
        }
        LocalPreparedList list = new LocalPreparedList(this, peer, descriptors.kind(), addresses, lengths, registrationIds,
                used.toArray(new LocalRegistration[0]));
        synchronized (preparedLists) {
            preparedLists.add(list);
        }
        return list;
    }

    @Override
    public void releasePrepared(PreparedList list)
    {
        LocalPreparedList local = ownList(list);
        local.released = true;
        synchronized (preparedLists) {
            preparedLists.remove(local);
        }
    }

    @Override
    public long post(TransferOp op, PreparedList localList, int[] localIndices, PreparedList remoteList, int[] remoteIndices, int count, byte[] notification)
    {
        requireNonNull(op, "op is null");
        requireNonNull(localIndices, "localIndices is null");
        requireNonNull(remoteIndices, "remoteIndices is null");
        checkOpen();
        LocalPreparedList local = ownList(localList);
        LocalPreparedList remote = ownList(remoteList);
        PostArguments.check(local, localIndices, remote, remoteIndices, count);
        String unusable = local.unusableReason();
        if (unusable == null) {
            unusable = remote.unusableReason();
        }
        if (unusable != null) {
            throw new KvBridgeException(ErrorCode.NOT_REGISTERED, "cannot post: " + unusable);
        }
        LocalTransfer transfer = acquireSlot();
        try {
            DescriptorPairs copies = transfer.copies;
            copies.clear(count);
            long totalBytes = 0;
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
                // a run merges only within one registration on each side, as a network transport
                // must (one memory handle and one remote key per operation)
                copies.add(local.addresses[l], local.registrationIds[l], remote.addresses[r], remote.registrationIds[r], length, true);
                totalBytes += length;
            }
            transfer.write = op == TransferOp.WRITE;
            transfer.bytes = totalBytes;
            transfer.localList = local;
            transfer.remoteList = remote;
            transfer.notification = notification == null ? null : notification.clone();
            // split by bytes, not by copies: a coalesced transfer may be one long copy
            transfer.parts = (int) Math.max(1, Math.min(copyThreads.length, totalBytes / SPLIT_THRESHOLD_BYTES));
            transfer.pendingParts.set(transfer.parts);
            transfer.failure = null;
            transfer.cancelled = false;
            transfer.status = TransferStatus.IN_PROGRESS;
        }
        catch (RuntimeException e) {
            freeSlot(transfer);
            throw e;
        }
        long handle = transfer.handle();
        for (int part = 0; part < transfer.parts; part++) {
            queues.get(part).add(transfer);
        }
        return handle;
    }

    private void copyLoop(int part)
    {
        ArrayBlockingQueue<LocalTransfer> queue = queues.get(part);
        while (true) {
            LocalTransfer transfer;
            try {
                transfer = queue.take();
            }
            catch (InterruptedException e) {
                return;
            }
            if (transfer == STOP) {
                return;
            }
            copyPart(transfer, part);
        }
    }

    private void copyPart(LocalTransfer transfer, int part)
    {
        try {
            String unusable = transfer.localList.unusableReason();
            if (unusable == null) {
                unusable = transfer.remoteList.unusableReason();
            }
            if (unusable != null) {
                transfer.failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, "transfer stopped before moving data: " + unusable);
            }
            else {
                copyBytes(transfer, part);
            }
        }
        catch (RuntimeException | Error e) {
            transfer.failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, "copy failed: " + e, e);
        }
        if (transfer.pendingParts.decrementAndGet() == 0) {
            complete(transfer);
        }
    }

    /** Copies one part's share of the transfer's bytes: a contiguous byte range across its copies. */
    private static void copyBytes(LocalTransfer transfer, int part)
    {
        // equal shares; the last part takes the remainder
        long share = transfer.bytes / transfer.parts;
        long begin = share * part;
        long end = part == transfer.parts - 1 ? transfer.bytes : begin + share;
        DescriptorPairs copies = transfer.copies;
        boolean write = transfer.write;
        long offset = 0;
        for (int i = 0; i < copies.size() && offset < end && !transfer.cancelled; i++) {
            long length = copies.length(i);
            long from = Math.max(begin, offset);
            long to = Math.min(end, offset + length);
            if (from < to) {
                long skip = from - offset;
                long source = (write ? copies.localAddress(i) : copies.remoteAddress(i)) + skip;
                long destination = (write ? copies.remoteAddress(i) : copies.localAddress(i)) + skip;
                MemorySegment.copy(ALL_MEMORY, source, ALL_MEMORY, destination, to - from);
            }
            offset += length;
        }
    }

    private void complete(LocalTransfer transfer)
    {
        TransferStatus status;
        if (transfer.cancelled) {
            status = TransferStatus.FAILED;
            transfer.failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, "transfer was released before it finished");
        }
        else if (transfer.failure != null) {
            status = TransferStatus.FAILED;
        }
        else {
            status = TransferStatus.DONE;
            if (transfer.notification != null) {
                LocalPeer peer = transfer.remoteList.peer;
                if (!peer.target.deliver(agentName, transfer.notification)) {
                    status = TransferStatus.FAILED;
                    transfer.failure = new KvBridgeException(ErrorCode.PEER_UNKNOWN, "data moved but peer '" + peer.name() + "' closed before its notification was delivered");
                }
            }
        }
        synchronized (slotLock) {
            transfer.clearReferences();
            transfer.status = status;
            if (transfer.released) {
                releaseSlotLocked(transfer);
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

    /** Puts a notification in this instance's inbox; false once closed. */
    boolean deliver(String sender, byte[] message)
    {
        if (closed.get()) {
            return false;
        }
        inbox.add(new Inbound(sender, message));
        wakeWaiter();
        return true;
    }

    @Override
    public TransferStatus status(long handle)
    {
        return transferOf(handle).status;
    }

    @Override
    public Optional<KvBridgeException> failure(long handle)
    {
        LocalTransfer transfer = transferOf(handle);
        return transfer.status == TransferStatus.FAILED ? Optional.ofNullable(transfer.failure) : Optional.empty();
    }

    @Override
    public int operations(long handle)
    {
        // one copy per coalesced run; a run the copy threads share between them still counts once
        synchronized (slotLock) {
            return transferOfLocked(handle).copies.size();
        }
    }

    @Override
    public void release(long handle)
    {
        synchronized (slotLock) {
            LocalTransfer transfer = transferOfLocked(handle);
            transfer.released = true;
            if (transfer.status.terminal()) {
                releaseSlotLocked(transfer);
            }
            else {
                // the copy thread finishing the last part frees the slot
                transfer.cancelled = true;
            }
        }
    }

    @Override
    public void notify(Peer peer, byte[] message)
    {
        requireNonNull(message, "message is null");
        checkOpen();
        LocalPeer local = ownPeer(peer);
        if (!local.usable() || !local.target.deliver(agentName, message.clone())) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peer.name() + "' was disconnected or closed; notification not sent");
        }
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
            transfers = inFlight;
        }
        return new BackendResources(registrations.length, lists, connected, transfers);
    }

    @Override
    public Optional<String> problem()
    {
        if (closed.get()) {
            return Optional.of("local transport '" + agentName + "' is closed");
        }
        for (Thread thread : copyThreads) {
            if (!thread.isAlive()) {
                return Optional.of("copy thread " + thread.getName() + " of local transport '" + agentName + "' has stopped (state="
                        + thread.getState() + "): transfers handed to it never finish; close this instance and create a new one");
            }
        }
        return Optional.empty();
    }

    @Override
    public void close()
    {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        LocalFabric.INSTANCE.remove(this);
        for (ArrayBlockingQueue<LocalTransfer> queue : queues) {
            queue.add(STOP);
        }
        for (Thread thread : copyThreads) {
            try {
                thread.join(10_000);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            if (thread.isAlive()) {
                LOG.warn("copy thread {} did not stop within 10 s", thread.getName());
            }
        }
        synchronized (slotLock) {
            // close releases every handle: their slots are retired, so later calls see HANDLE_UNKNOWN
            for (int i = 0; i < slotCount; i++) {
                LocalTransfer transfer = slots[i];
                if (!transfer.released) {
                    transfer.released = true;
                    transfer.cancelled = true;
                    transfer.status = TransferStatus.FAILED;
                    transfer.generation++;
                }
                transfer.clearReferences();
            }
            inFlight = 0;
        }
        synchronized (registrationLock) {
            for (LocalRegistration registration : registrations) {
                registration.live = false;
            }
            registrations = new LocalRegistration[0];
        }
        synchronized (peers) {
            peers.forEach(peer -> peer.connected = false);
            peers.clear();
        }
        synchronized (preparedLists) {
            preparedLists.forEach(list -> list.released = true);
            preparedLists.clear();
        }
        inbox.clear();
        // a waiter learns from its next poll that everything is gone
        wakeWaiter();
        progressWaiter = null;
    }

    private LocalTransfer acquireSlot()
    {
        synchronized (slotLock) {
            if (inFlight >= maxInFlight) {
                throw new KvBridgeException(ErrorCode.TRANSFER_FAILED, "max-in-flight=" + maxInFlight
                        + " transfers are posted and not released; release finished handles or raise max-in-flight");
            }
            LocalTransfer transfer;
            if (freeCount > 0) {
                transfer = slots[freeSlots[--freeCount]];
            }
            else {
                if (slotCount == slots.length) {
                    slots = Arrays.copyOf(slots, slots.length * 2);
                }
                transfer = new LocalTransfer(slotCount);
                slots[slotCount++] = transfer;
            }
            transfer.generation++;
            transfer.released = false;
            inFlight++;
            return transfer;
        }
    }

    private void freeSlot(LocalTransfer transfer)
    {
        synchronized (slotLock) {
            transfer.status = TransferStatus.DONE;
            transfer.released = true;
            releaseSlotLocked(transfer);
        }
    }

    private void releaseSlotLocked(LocalTransfer transfer)
    {
        transfer.clearReferences();
        transfer.generation++;
        if (freeCount == freeSlots.length) {
            freeSlots = Arrays.copyOf(freeSlots, freeSlots.length * 2);
        }
        freeSlots[freeCount++] = transfer.slot;
        inFlight--;
    }

    private LocalTransfer transferOf(long handle)
    {
        synchronized (slotLock) {
            return transferOfLocked(handle);
        }
    }

    private LocalTransfer transferOfLocked(long handle)
    {
        int slot = (int) handle;
        int generation = (int) (handle >>> 32);
        if (slot < 0 || slot >= slotCount || slots[slot].generation != generation || slots[slot].released) {
            throw new KvBridgeException(ErrorCode.HANDLE_UNKNOWN, "transfer handle 0x" + Long.toHexString(handle)
                    + " is unknown to '" + agentName + "' or was already released");
        }
        return slots[slot];
    }

    private LocalPeer ownPeer(Peer peer)
    {
        requireNonNull(peer, "peer is null");
        if (!(peer instanceof LocalPeer local) || local.owner != this) {
            throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "peer " + peer + " was not connected by local transport '" + agentName + "'");
        }
        return local;
    }

    private LocalPreparedList ownList(PreparedList list)
    {
        requireNonNull(list, "prepared list is null");
        if (!(list instanceof LocalPreparedList local) || local.owner != this) {
            throw new KvBridgeException(ErrorCode.FOREIGN_HANDLE, "prepared list was not prepared by local transport '" + agentName + "'");
        }
        return local;
    }

    private void checkOpen()
    {
        if (closed.get()) {
            throw new KvBridgeException(ErrorCode.CLOSED, "local transport '" + agentName + "' is closed");
        }
    }

    @Override
    public String toString()
    {
        return "LocalTransferBackend[" + agentName + ", copyThreads=" + copyThreads.length + "]";
    }
}
