package io.kvbridge.core.local;

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
import io.kvbridge.transport.Grants;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.PostChecks;
import io.kvbridge.transport.Registration;
import io.kvbridge.transport.Registrations;
import io.kvbridge.transport.TransferTable;
import io.kvbridge.transport.TransportTypes;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The embedded transport: peers in the same JVM, bytes moved by
 * {@link java.lang.foreign.MemorySegment#copy} on the instance's own copy threads
 * ({@link LocalCopier}), with the same asynchronous contract as a network transport. It is the
 * reference every other transport is tested against, and the smallest transport built on the
 * toolkit: handles, registrations, lists, peers and notifications are the toolkit's.
 *
 * <p>A post resolves its pairs into copies, merging runs contiguous on both sides within one
 * registration on each side ({@link io.kvbridge.spi.transfer.Capability#COALESCING}), then checks
 * every copy's target range against the target instance's grants under the key the post presents
 * ({@link io.kvbridge.spi.transfer.Capability#GRANTED_ACCESS}): an in-JVM peer is no threat, but
 * the engine's grants are then exercised wherever {@code local} runs.
 *
 * <p>Threads: every method may be called from any thread; the toolkit's parts lock for themselves,
 * {@code peers} is guarded by itself.
 */
final class LocalTransferBackend extends AbstractTransferBackend<LocalPeer, LocalPreparedList>
{
    // copies are memory copies: a grant's admitted transfers end within this even on a loaded machine
    private static final long REVOKE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final boolean simulateDevice;
    private final Registrations<Registration> registrations;
    private final TransferTable<LocalTransfer> transfers;
    private final Inbox inbox;
    private final LocalCopier copier;
    private final List<LocalPeer> peers = new ArrayList<>();
    private final Grants grants;

    LocalTransferBackend(String agentName, int copyThreadCount, boolean simulateDevice, int maxInFlight)
    {
        InstanceGuard guard = new InstanceGuard(LocalBackendFactory.NAME, requireNonNull(agentName, "agentName is null"));
        TransferTable<LocalTransfer> table = new TransferTable<>(guard.description(), maxInFlight, LocalTransfer::new);
        Inbox notifications = new Inbox();
        // a release returns only once the copy threads left the released transfer (cancelRunning), and a revoke only once
        // the copies it admitted ended (revoke)
        // notifications cross no wire here: any length fits
        super(guard, new TransportTypes<>(LocalPeer.class, LocalPreparedList.class, Integer.MAX_VALUE), table, notifications, WriteStop.ON_RETURN,
                WriteStop.ON_RETURN);
        this.transfers = table;
        this.inbox = notifications;
        this.simulateDevice = simulateDevice;
        this.registrations = new Registrations<>(guard.description());
        this.grants = new Grants(guard.description());
        LocalFabric.INSTANCE.add(this);
        this.copier = new LocalCopier(guard, copyThreadCount, maxInFlight, this::complete);
    }

    boolean closed()
    {
        return guard.isClosed();
    }

    @Override
    public void register(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        guard.checkOpen();
        if (allocation.kind() == MemoryKind.DEVICE && !simulateDevice) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "local moves host memory only, got " + allocation
                    + "; use a device transport, or set simulate-device=true to test device paths with host-backed memory");
        }
        registrations.add(new Registration(allocation));
    }

    @Override
    public void deregister(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        guard.checkOpen();
        registrations.remove(allocation);
    }

    /** Host and simulated device memory alike are host memory here: a checked copy on the caller's thread. */
    @Override
    protected Registrations<?> hostCopies()
    {
        return registrations;
    }

    @Override
    public byte[] localMetadata()
    {
        guard.checkOpen();
        return LocalFabric.INSTANCE.metadata(guard.agentName());
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        guard.checkOpen();
        LocalTransferBackend target = LocalFabric.INSTANCE.resolve(peerMetadata);
        synchronized (peers) {
            for (LocalPeer peer : peers) {
                if (peer.target == target && peer.unusableReason() == null) {
                    return peer;
                }
            }
            LocalPeer peer = new LocalPeer(guard, target);
            peers.add(peer);
            return peer;
        }
    }

    @Override
    protected void disconnectChecked(LocalPeer local)
    {
        local.markUnusable("it was disconnected");
        synchronized (peers) {
            peers.remove(local);
        }
    }

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        guard.checkOpen();
        return prepare(null, this, descriptors);
    }

    @Override
    protected LocalPreparedList prepareRemoteChecked(LocalPeer local, DescriptorList descriptors)
    {
        local.checkUsable("connect() again");
        return prepare(local, local.target, descriptors);
    }

    private LocalPreparedList prepare(LocalPeer peer, LocalTransferBackend memoryOwner, DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        if (descriptors.kind() == MemoryKind.DEVICE && !memoryOwner.simulateDevice) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "device descriptors given but local transport '" + memoryOwner.agentName()
                    + "' moves host memory only (simulate-device=false)");
        }
        // the peer's memory is in this JVM: its own registrations decide what the list may address
        return lists.add(new LocalPreparedList(guard, peer, descriptors.kind(), descriptors.device(), descriptors.addresses(),
                descriptors.lengths(), memoryOwner.registrations.cover(descriptors)));
    }

    @Override
    public long grant(byte[] key, TransferOp access, PreparedList local, int[] indices, int count)
    {
        guard.checkOpen();
        LocalPreparedList list = ownList(local);
        if (list.peer() != null) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "a grant names this instance's own memory; got a list of peer '"
                    + list.peer().name() + "'s memory");
        }
        return grants.grant(key, access, list, indices, count);
    }

    /**
     * Ends a grant once every copy it admitted has finished: copies of a local peer cannot be cut
     * off, so the revoke waits for them, and says so when they outlast the wait.
     */
    @Override
    public void revoke(long grant)
    {
        if (!grants.revoke(grant, REVOKE_WAIT_NANOS)) {
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, guard.description() + ": a transfer admitted under grant " + grant
                    + " still runs after " + TimeUnit.NANOSECONDS.toMillis(REVOKE_WAIT_NANOS) + " ms; its copy may still write the granted memory, "
                    + "so keep it from reuse until the transfer ends");
        }
    }

    /**
     * A released copy still running stops at its next descriptor; the release waits for that
     * (up to 10 s), so no byte of it lands after the release returned.
     */
    @Override
    protected void cancelRunning()
    {
        if (!copier.awaitReleasedCopies(REVOKE_WAIT_NANOS)) {
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, guard.description() + ": a released transfer still copies after "
                    + TimeUnit.NANOSECONDS.toMillis(REVOKE_WAIT_NANOS) + " ms; its memory may still be written, so keep it from reuse");
        }
    }

    @Override
    protected long postChecked(TransferRequest request, LocalPreparedList local, LocalPreparedList remote)
    {
        LocalTransfer transfer = transfers.acquire();
        try {
            transfer.bytes = PostChecks.resolve(transfer.copies, request, true);
            transfer.write = request.op() == TransferOp.WRITE;
            transfer.localList = local;
            transfer.remoteList = remote;
            byte[] notification = request.notification();
            transfer.notification = notification == null ? null : notification.clone();
        }
        catch (RuntimeException e) {
            transfers.abandon(transfer);
            throw e;
        }
        long handle = transfer.handle();
        LocalTransferBackend target = ((LocalPeer) remote.transportPeer()).target;
        String refusal = target.admit(transfer, request.grantKey(), guard.agentName());
        if (refusal != null) {
            transfers.finish(transfer, new KvBridgeException(ErrorCode.NOT_GRANTED, describe(transfer) + " refused by peer '" + target.agentName()
                    + "': " + refusal));
            inbox.wake();
            return handle;
        }
        copier.start(transfer);
        return handle;
    }

    /**
     * Admits a transfer whose target is this instance when a grant under its key covers every copy's
     * range here; otherwise counts the refusal and says why.
     *
     * @return null when admitted (the transfer then holds the grant until it ends), else the reason.
     */
    private String admit(LocalTransfer transfer, byte[] key, String initiator)
    {
        TransferOp access = transfer.write ? TransferOp.WRITE : TransferOp.READ;
        Grants.Entry entry = key == null ? null : grants.admit(key, key.length);
        String refusal = null;
        if (entry == null) {
            refusal = key == null ? "it presented no grant key" : "no live grant has the key it presented";
        }
        else {
            var copies = transfer.copies;
            for (int i = 0; i < copies.size() && refusal == null; i++) {
                if (!entry.covers(access, copies.remoteAddress(i), copies.length(i))) {
                    refusal = String.format(Locale.ROOT, "%d bytes at 0x%x lie outside what its key grants for %s", copies.length(i),
                            copies.remoteAddress(i), access);
                }
            }
            if (refusal != null) {
                entry.done(grants);
            }
        }
        if (refusal != null) {
            if (key != null) {
                // outside a live grant too: the range may have been granted until the request's grants began to go
                grants.refusedKey(initiator, key, key.length, access + " " + refusal);
            }
            else {
                grants.refused(initiator, access + " " + refusal);
            }
            return refusal;
        }
        transfer.admittedBy = this;
        transfer.admitted = entry;
        return null;
    }

    private static String describe(LocalTransfer transfer)
    {
        return String.format(Locale.ROOT, "%s of %d bytes in %d copies", transfer.write ? "WRITE" : "READ", transfer.bytes, transfer.copies.size());
    }

    /** Ends a transfer on the copy thread that finished its last part; the notification follows the data. */
    private void complete(LocalTransfer transfer, KvBridgeException copyFailure)
    {
        if (transfer.admitted != null) {
            transfer.admitted.done(transfer.admittedBy.grants);
        }
        KvBridgeException failure = copyFailure;
        if (transfer.cancelled()) {
            failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, "transfer was released before it finished");
        }
        else if (failure == null && transfer.notification != null) {
            LocalPeer peer = (LocalPeer) transfer.remoteList.transportPeer();
            if (!peer.target.deliver(guard.agentName(), transfer.notification)) {
                failure = new KvBridgeException(ErrorCode.PEER_UNKNOWN, "data moved but peer '" + peer.name() + "' closed before its notification was delivered");
            }
        }
        transfers.finish(transfer, failure);
        inbox.wake();
    }

    /** Puts a notification in this instance's inbox; false once closed. */
    boolean deliver(String sender, byte[] message)
    {
        if (guard.isClosed()) {
            return false;
        }
        inbox.add(sender, message);
        return true;
    }

    @Override
    protected void notifyChecked(LocalPeer local, byte[] message)
    {
        if (local.unusableReason() != null || !local.target.deliver(guard.agentName(), message.clone())) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + local.name() + "' was disconnected or closed; notification not sent");
        }
    }

    @Override
    protected BackendResources held(int transfers)
    {
        synchronized (peers) {
            return new BackendResources(registrations.size(), lists.size(), peers.size(), transfers);
        }
    }

    @Override
    protected Optional<String> workerProblem()
    {
        return copier.problem().or(grants::problem);
    }

    @Override
    protected void closeInstance()
    {
        LocalFabric.INSTANCE.remove(this);
        copier.stop();
        registrations.clear();
        synchronized (peers) {
            peers.forEach(peer -> peer.markUnusable("this transport was closed"));
            peers.clear();
        }
        lists.releaseAll(null);
    }
}
