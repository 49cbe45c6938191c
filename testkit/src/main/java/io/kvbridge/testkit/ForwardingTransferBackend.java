package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.spi.transfer.WriteStop;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * A transport that hands every call to another one: decorators (fault injection, recording)
 * override only the calls they change.
 */
public abstract class ForwardingTransferBackend implements TransferBackend
{
    private final TransferBackend delegate;

    /**
     * Wraps a transport.
     *
     * @param delegate the transport every call goes to.
     */
    protected ForwardingTransferBackend(TransferBackend delegate)
    {
        this.delegate = requireNonNull(delegate, "delegate is null");
    }

    /** {@return the wrapped transport} */
    protected final TransferBackend delegate()
    {
        return delegate;
    }

    @Override
    public String name()
    {
        return delegate.name();
    }

    @Override
    public String agentName()
    {
        return delegate.agentName();
    }

    @Override
    public void register(Allocation allocation)
    {
        delegate.register(allocation);
    }

    @Override
    public void deregister(Allocation allocation)
    {
        delegate.deregister(allocation);
    }

    @Override
    public Allocation allocate(long bytes, MemoryKind kind, int device)
    {
        return delegate.allocate(bytes, kind, device);
    }

    @Override
    public void copyFromHost(MemorySegment source, Allocation destination, long offset)
    {
        delegate.copyFromHost(source, destination, offset);
    }

    @Override
    public void copyToHost(Allocation source, long offset, MemorySegment destination)
    {
        delegate.copyToHost(source, offset, destination);
    }

    @Override
    public byte[] localMetadata()
    {
        return delegate.localMetadata();
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        return delegate.connect(peerMetadata);
    }

    @Override
    public void disconnect(Peer peer)
    {
        delegate.disconnect(peer);
    }

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        return delegate.prepareLocal(descriptors);
    }

    @Override
    public PreparedList prepareRemote(Peer peer, DescriptorList descriptors)
    {
        return delegate.prepareRemote(peer, descriptors);
    }

    @Override
    public void releasePrepared(PreparedList list)
    {
        delegate.releasePrepared(list);
    }

    @Override
    public long post(TransferRequest request)
    {
        return delegate.post(request);
    }

    @Override
    public long grant(byte[] key, TransferOp access, PreparedList local, int[] indices, int count)
    {
        return delegate.grant(key, access, local, indices, count);
    }

    @Override
    public void revoke(long grant)
    {
        delegate.revoke(grant);
    }

    @Override
    public WriteStop writeStopOnRevoke()
    {
        return delegate.writeStopOnRevoke();
    }

    @Override
    public String writerExited(String peerAgent)
    {
        return delegate.writerExited(peerAgent);
    }

    @Override
    public WriteStop writeStopOnRelease()
    {
        return delegate.writeStopOnRelease();
    }

    @Override
    public TransferStatus status(long handle)
    {
        return delegate.status(handle);
    }

    @Override
    public int operations(long handle)
    {
        return delegate.operations(handle);
    }

    @Override
    public Optional<KvBridgeException> failure(long handle)
    {
        return delegate.failure(handle);
    }

    @Override
    public void release(long handle)
    {
        delegate.release(handle);
    }

    @Override
    public void notify(Peer peer, byte[] message)
    {
        delegate.notify(peer, message);
    }

    @Override
    public int drainNotifications(NotificationSink sink)
    {
        return delegate.drainNotifications(sink);
    }

    @Override
    public BackendResources resources()
    {
        return delegate.resources();
    }

    @Override
    public boolean wakeOnProgress(Thread waiter)
    {
        return delegate.wakeOnProgress(waiter);
    }

    @Override
    public Optional<String> problem()
    {
        return delegate.problem();
    }

    @Override
    public void close()
    {
        delegate.close();
    }
}
