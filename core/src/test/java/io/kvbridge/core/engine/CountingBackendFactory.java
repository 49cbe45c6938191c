package io.kvbridge.core.engine;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.ForwardingBackendFactory;
import io.kvbridge.testkit.ForwardingTransferBackend;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * Wraps another factory's transports, counts what each rank registers with them (allocations,
 * prepared lists, posts), and can hold back and then fail the transfers whose remote list was
 * prepared for a chosen peer, as a transport that reports a failed READ does.
 */
final class CountingBackendFactory extends ForwardingBackendFactory
{
    final AtomicInteger registrations = new AtomicInteger();
    // lists prepared for transfers: a list that names a grant's blocks is counted in grants instead
    final AtomicInteger preparedLists = new AtomicInteger();
    final AtomicInteger grants = new AtomicInteger();
    final AtomicInteger posts = new AtomicInteger();
    /** Transfers to a peer whose agent name matches report IN_PROGRESS while {@link #holding}, then FAILED. */
    volatile Predicate<String> failingPeer = agent -> false;
    volatile boolean holding = true;
    private final Set<Long> failing = ConcurrentHashMap.newKeySet();

    CountingBackendFactory(TransferBackendFactory delegate)
    {
        super(delegate);
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        Map<PreparedList, String> peerOfList = new ConcurrentHashMap<>();
        return new ForwardingTransferBackend(delegate.create(config, context))
        {
            @Override
            public void register(Allocation allocation)
            {
                registrations.incrementAndGet();
                super.register(allocation);
            }

            @Override
            public long grant(byte[] key, TransferOp access, PreparedList local, int[] indices, int count)
            {
                // every list the engine prepares for a grant is granted once
                preparedLists.decrementAndGet();
                grants.incrementAndGet();
                return super.grant(key, access, local, indices, count);
            }

            @Override
            public PreparedList prepareLocal(DescriptorList descriptors)
            {
                preparedLists.incrementAndGet();
                return super.prepareLocal(descriptors);
            }

            @Override
            public PreparedList prepareRemote(Peer peer, DescriptorList descriptors)
            {
                preparedLists.incrementAndGet();
                PreparedList list = super.prepareRemote(peer, descriptors);
                peerOfList.put(list, peer.name());
                return list;
            }

            @Override
            public long post(TransferRequest request)
            {
                posts.incrementAndGet();
                long handle = super.post(request);
                String peer = peerOfList.get(request.remote());
                if (peer != null && failingPeer.test(peer)) {
                    failing.add(handle);
                }
                return handle;
            }

            @Override
            public TransferStatus status(long handle)
            {
                if (failing.contains(handle)) {
                    return holding ? TransferStatus.IN_PROGRESS : TransferStatus.FAILED;
                }
                return super.status(handle);
            }

            @Override
            public java.util.Optional<io.kvbridge.spi.KvBridgeException> failure(long handle)
            {
                if (failing.contains(handle) && !holding) {
                    return java.util.Optional.of(new io.kvbridge.spi.KvBridgeException(io.kvbridge.spi.ErrorCode.TRANSFER_FAILED,
                            "injected failure of the READ handle 0x" + Long.toHexString(handle)));
                }
                return super.failure(handle);
            }
        };
    }
}
