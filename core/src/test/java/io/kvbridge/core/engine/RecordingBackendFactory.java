package io.kvbridge.core.engine;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Wraps another factory's transports and records, per agent, the posts each one made and the
 * notifications each one received (as text), so tests can see the protocol on the wire.
 */
final class RecordingBackendFactory implements TransferBackendFactory
{
    private final TransferBackendFactory delegate;
    final Map<String, List<String>> received = new ConcurrentHashMap<>();
    final Map<String, List<TransferOp>> posts = new ConcurrentHashMap<>();
    /** While positive, each release throws instead of releasing, and counts this down. */
    final AtomicInteger failingReleases = new AtomicInteger();

    RecordingBackendFactory(TransferBackendFactory delegate)
    {
        this.delegate = delegate;
    }

    List<String> receivedBy(String agent)
    {
        return List.copyOf(received.getOrDefault(agent, List.of()));
    }

    List<TransferOp> postsBy(String agent)
    {
        return List.copyOf(posts.getOrDefault(agent, List.of()));
    }

    @Override
    public String name()
    {
        return delegate.name();
    }

    @Override
    public int spiVersion()
    {
        return delegate.spiVersion();
    }

    @Override
    public Availability probe()
    {
        return delegate.probe();
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        TransferBackend backend = delegate.create(config, context);
        List<String> inbox = received.computeIfAbsent(backend.agentName(), ignored -> java.util.Collections.synchronizedList(new ArrayList<>()));
        List<TransferOp> outbox = posts.computeIfAbsent(backend.agentName(), ignored -> java.util.Collections.synchronizedList(new ArrayList<>()));
        return new TransferBackend()
        {
            @Override
            public String name()
            {
                return backend.name();
            }

            @Override
            public String agentName()
            {
                return backend.agentName();
            }

            @Override
            public void register(Allocation allocation)
            {
                backend.register(allocation);
            }

            @Override
            public void deregister(Allocation allocation)
            {
                backend.deregister(allocation);
            }

            @Override
            public byte[] localMetadata()
            {
                return backend.localMetadata();
            }

            @Override
            public Peer connect(byte[] peerMetadata)
            {
                return backend.connect(peerMetadata);
            }

            @Override
            public void disconnect(Peer peer)
            {
                backend.disconnect(peer);
            }

            @Override
            public PreparedList prepareLocal(DescriptorList descriptors)
            {
                return backend.prepareLocal(descriptors);
            }

            @Override
            public PreparedList prepareRemote(Peer peer, DescriptorList descriptors)
            {
                return backend.prepareRemote(peer, descriptors);
            }

            @Override
            public void releasePrepared(PreparedList list)
            {
                backend.releasePrepared(list);
            }

            @Override
            public long post(TransferOp op, PreparedList local, int[] localIndices, PreparedList remote, int[] remoteIndices, int count,
                    byte[] notification)
            {
                long handle = backend.post(op, local, localIndices, remote, remoteIndices, count, notification);
                outbox.add(op);
                return handle;
            }

            @Override
            public TransferStatus status(long handle)
            {
                return backend.status(handle);
            }

            @Override
            public Optional<KvBridgeException> failure(long handle)
            {
                return backend.failure(handle);
            }

            @Override
            public void release(long handle)
            {
                if (failingReleases.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "injected release failure");
                }
                backend.release(handle);
            }

            @Override
            public void notify(Peer peer, byte[] message)
            {
                backend.notify(peer, message);
            }

            @Override
            public int drainNotifications(NotificationSink sink)
            {
                return backend.drainNotifications((sender, message) -> {
                    inbox.add(new String(message, UTF_8));
                    sink.accept(sender, message);
                });
            }

            @Override
            public BackendResources resources()
            {
                return backend.resources();
            }

            @Override
            public void close()
            {
                backend.close();
            }
        };
    }
}
