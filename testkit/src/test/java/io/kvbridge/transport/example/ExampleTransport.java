package io.kvbridge.transport.example;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.transport.AbstractTransferBackend;
import io.kvbridge.transport.AbstractTransferBackendFactory;
import io.kvbridge.transport.CoalescedTransferSlot;
import io.kvbridge.transport.Coverage;
import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnedPreparedList;
import io.kvbridge.transport.PostChecks;
import io.kvbridge.transport.Registration;
import io.kvbridge.transport.Registrations;
import io.kvbridge.transport.TransferTable;
import io.kvbridge.transport.TransportPeer;
import io.kvbridge.transport.TransportTypes;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The smallest complete transport built on the toolkit: peers in one JVM, bytes copied on the
 * posting thread, so a transfer is done when {@code post} returns. Everything a transport must keep
 * (handles, registrations, lists, peers, notifications, closing) is the toolkit's; what is left is
 * the transport's own business: how to reach a peer and how to move bytes. It passes the whole
 * conformance suite, which is what a new transport starts from.
 */
public final class ExampleTransport extends AbstractTransferBackendFactory
{
    static final String NAME = "example";
    // peers found by agent name; a real transport connects through the peer's metadata instead
    private static final Map<String, Instance> DIRECTORY = new ConcurrentHashMap<>();
    private static final MemorySegment ALL_MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    /** Creates the factory; {@link java.util.ServiceLoader} finds it through {@code META-INF/services}. */
    public ExampleTransport()
    {
        super(NAME, 0);
    }

    @Override
    public Availability probe()
    {
        return Availability.available(Set.of(Capability.HOST_MEMORY, Capability.COALESCING), Map.of());
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        new PluginConfig(NAME, config).finish();
        return new Instance(context.agentName());
    }

    private static final class ExamplePeer extends TransportPeer
    {
        final Instance target;

        ExamplePeer(InstanceGuard owner, Instance target)
        {
            super(owner, target.agentName());
            this.target = target;
        }
    }

    private static final class ExampleList extends OwnedPreparedList
    {
        ExampleList(InstanceGuard owner, ExamplePeer peer, DescriptorList descriptors, Coverage coverage)
        {
            super(owner, peer, descriptors.kind(), descriptors.device(), descriptors.addresses(), descriptors.lengths(),
                    coverage.registrationIds(), coverage.registrations());
        }
    }

    private static final class ExampleTransfer extends CoalescedTransferSlot
    {
        ExampleTransfer(int index)
        {
            super(index);
        }

        @Override
        protected void clearReferences()
        {
        }
    }

    private static final class Instance extends AbstractTransferBackend<ExamplePeer, ExampleList>
    {
        private final Registrations<Registration> registrations;
        private final TransferTable<ExampleTransfer> transfers;
        private final Set<ExamplePeer> peers = ConcurrentHashMap.newKeySet();
        private final Inbox inbox;

        Instance(String agentName)
        {
            InstanceGuard guard = new InstanceGuard(NAME, agentName);
            TransferTable<ExampleTransfer> table = new TransferTable<>(guard.description(), 1024, ExampleTransfer::new);
            Inbox notifications = new Inbox();
            // notifications cross no wire here: any length fits
            super(guard, new TransportTypes<>(ExamplePeer.class, ExampleList.class, Integer.MAX_VALUE), table, notifications);
            transfers = table;
            inbox = notifications;
            registrations = new Registrations<>(guard.description());
            if (DIRECTORY.putIfAbsent(agentName, this) != null) {
                throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "agent name '" + agentName + "' is taken in this JVM");
            }
        }

        @Override
        public void register(Allocation allocation)
        {
            guard.checkOpen();
            registrations.add(new Registration(requireNonNull(allocation, "allocation is null")));
        }

        @Override
        public void deregister(Allocation allocation)
        {
            guard.checkOpen();
            registrations.remove(allocation);
        }

        @Override
        public byte[] localMetadata()
        {
            guard.checkOpen();
            return guard.agentName().getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public Peer connect(byte[] peerMetadata)
        {
            guard.checkOpen();
            Instance target = DIRECTORY.get(new String(requireNonNull(peerMetadata, "peerMetadata is null"), StandardCharsets.UTF_8));
            if (target == null) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "no example transport of that name runs in this JVM");
            }
            ExamplePeer peer = new ExamplePeer(guard, target);
            peers.add(peer);
            return peer;
        }

        @Override
        protected void disconnectChecked(ExamplePeer own)
        {
            own.markUnusable("it was disconnected");
            peers.remove(own);
        }

        @Override
        public PreparedList prepareLocal(DescriptorList descriptors)
        {
            guard.checkOpen();
            return lists.add(new ExampleList(guard, null, descriptors, registrations.cover(descriptors)));
        }

        @Override
        protected ExampleList prepareRemoteChecked(ExamplePeer own, DescriptorList descriptors)
        {
            if (own.unusableReason() != null || own.target.guard.isClosed()) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + own.name() + "' is disconnected or closed");
            }
            // the peer's memory is in this JVM, so its own registrations bound the list
            return lists.add(new ExampleList(guard, own, descriptors, own.target.registrations.cover(descriptors)));
        }

        @Override
        protected long postChecked(TransferRequest request, ExampleList local, ExampleList remote)
        {
            TransferOp op = request.op();
            byte[] notification = request.notification();
            ExampleTransfer transfer = transfers.acquire();
            try {
                PostChecks.resolve(transfer.copies, request, true);
            }
            catch (RuntimeException e) {
                transfers.abandon(transfer);
                throw e;
            }
            DescriptorPairs copies = transfer.copies;
            for (int i = 0; i < copies.size(); i++) {
                long from = op == TransferOp.WRITE ? copies.localAddress(i) : copies.remoteAddress(i);
                long to = op == TransferOp.WRITE ? copies.remoteAddress(i) : copies.localAddress(i);
                MemorySegment.copy(ALL_MEMORY, from, ALL_MEMORY, to, copies.length(i));
            }
            Instance target = ((ExamplePeer) remote.transportPeer()).target;
            KvBridgeException failure = null;
            if (notification != null && !target.deliver(guard.agentName(), notification.clone())) {
                failure = new KvBridgeException(ErrorCode.PEER_UNKNOWN, "data moved but the peer closed before its notification");
            }
            long handle = transfer.handle();
            transfers.finish(transfer, failure);
            inbox.wake();
            return handle;
        }

        boolean deliver(String sender, byte[] message)
        {
            if (guard.isClosed()) {
                return false;
            }
            inbox.add(sender, message);
            return true;
        }

        @Override
        protected void notifyChecked(ExamplePeer own, byte[] message)
        {
            if (own.unusableReason() != null || !own.target.deliver(guard.agentName(), message.clone())) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + own.name() + "' is disconnected or closed");
            }
        }

        @Override
        protected BackendResources held(int transfers)
        {
            return new BackendResources(registrations.size(), lists.size(), peers.size(), transfers);
        }

        @Override
        protected Optional<String> workerProblem()
        {
            // copies run on the posting thread: there is no thread of its own to stop
            return Optional.empty();
        }

        @Override
        protected void closeInstance()
        {
            DIRECTORY.remove(guard.agentName(), this);
            registrations.clear();
            lists.releaseAll(null);
            peers.forEach(peer -> peer.markUnusable("this transport was closed"));
            peers.clear();
        }
    }
}
