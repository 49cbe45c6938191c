package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;

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
import io.kvbridge.testkit.RemoteWire.Call;
import java.io.DataInputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;

/**
 * A transport instance that lives in a {@link RemoteTargetProcess}, as the conformance suite's
 * target: every call it forwards runs there, on the instance the child created. Peers and prepared
 * lists stay in the child and are named here by ids; a peer or list this proxy did not hand out
 * reaches the child's instance as an object of nobody's, so that the instance itself refuses it. A
 * {@link io.kvbridge.spi.KvBridgeException} comes back with its code and message. Only what the
 * suite asks of its target is forwarded; the rest (posting, polling, host copies, counts) throws
 * {@link UnsupportedOperationException} naming the method.
 */
final class RemoteTransferBackend implements TransferBackend
{
    /** The id a handle this proxy did not hand out travels as. */
    static final long FOREIGN = 0;
    /** The id {@code null} travels as. */
    static final long NULL = -1;

    private final TargetProcessLink link;
    private final String name;
    private final String agentName;
    private final long pid;

    /** A peer of the child's instance. */
    private record RemotePeer(RemoteTransferBackend owner, long id, String name) implements Peer
    {
    }

    /** A list the child's instance prepared. */
    private record RemoteList(RemoteTransferBackend owner, long id, int size, MemoryKind kind, Peer peer) implements PreparedList
    {
    }

    /**
     * Memory the child's instance allocated, and the descriptor behind it there.
     *
     * @param allocation as the instance returned it.
     * @param file the descriptor's number in the child and the file offset of the allocation's first byte.
     */
    record SharedAllocation(Allocation allocation, SharedMappings.SharedFile file)
    {
    }

    private RemoteTransferBackend(TargetProcessLink link, String name, String agentName, long pid)
    {
        this.link = link;
        this.name = name;
        this.agentName = agentName;
        this.pid = pid;
    }

    /**
     * Creates the instance in the child: an instance of {@code testClass}, made there with its
     * no-argument constructor, supplies the factory and the options.
     */
    static RemoteTransferBackend start(TargetProcessLink link, Class<? extends TransferBackendConformanceFixture> testClass, String agentName)
    {
        return link.call(Call.START, out -> {
            RemoteWire.writeString(out, testClass.getName());
            RemoteWire.writeString(out, agentName);
        }, in -> {
            long pid = in.readLong();
            String transport = RemoteWire.readString(in);
            String agent = RemoteWire.readString(in);
            if (pid != link.pid()) {
                throw new IOException("the target process says it is pid " + pid + " but was started as pid " + link.pid());
            }
            return new RemoteTransferBackend(link, transport, agent, pid);
        });
    }

    /** {@return the pid of the process the instance lives in} */
    long pid()
    {
        return pid;
    }

    @Override
    public String name()
    {
        return name;
    }

    @Override
    public String agentName()
    {
        return agentName;
    }

    @Override
    public void register(Allocation allocation)
    {
        link.call(Call.REGISTER, out -> RemoteWire.writeAllocation(out, allocation), RemoteWire.NOTHING);
    }

    @Override
    public void deregister(Allocation allocation)
    {
        link.call(Call.DEREGISTER, out -> RemoteWire.writeAllocation(out, allocation), RemoteWire.NOTHING);
    }

    @Override
    public Allocation allocate(long bytes, MemoryKind kind, int device)
    {
        return link.call(Call.ALLOCATE, out -> {
            out.writeLong(bytes);
            RemoteWire.writeEnum(out, kind);
            out.writeInt(device);
        }, RemoteWire::readAllocation);
    }

    /**
     * Allocates host memory with the instance's {@code allocate(bytes, HOST, 0)} and finds the
     * descriptor behind it in the child.
     */
    SharedAllocation allocateShared(long bytes)
    {
        return link.call(Call.ALLOCATE_SHARED, out -> out.writeLong(bytes),
                in -> new SharedAllocation(RemoteWire.readAllocation(in), new SharedMappings.SharedFile(in.readInt(), in.readLong())));
    }

    @Override
    public byte[] localMetadata()
    {
        return link.call(Call.LOCAL_METADATA, RemoteWire.NONE, RemoteWire::readBytes);
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        return link.call(Call.CONNECT, out -> RemoteWire.writeBytes(out, peerMetadata),
                in -> new RemotePeer(this, in.readLong(), RemoteWire.readString(in)));
    }

    @Override
    public void disconnect(Peer peer)
    {
        link.call(Call.DISCONNECT, out -> out.writeLong(idOf(peer)), RemoteWire.NOTHING);
    }

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        return link.call(Call.PREPARE_LOCAL, out -> RemoteWire.writeDescriptors(out, descriptors), in -> readList(in, null));
    }

    @Override
    public PreparedList prepareRemote(Peer peer, DescriptorList descriptors)
    {
        return link.call(Call.PREPARE_REMOTE, out -> {
            out.writeLong(idOf(peer));
            RemoteWire.writeDescriptors(out, descriptors);
        }, in -> readList(in, peer));
    }

    private RemoteList readList(DataInputStream in, Peer peer) throws IOException
    {
        long id = in.readLong();
        int size = in.readInt();
        return new RemoteList(this, id, size, RemoteWire.readEnum(in, MemoryKind.class), peer);
    }

    @Override
    public void releasePrepared(PreparedList list)
    {
        link.call(Call.RELEASE_PREPARED, out -> out.writeLong(idOf(list)), RemoteWire.NOTHING);
    }

    @Override
    public long grant(byte[] key, TransferOp access, PreparedList local, int[] indices, int count)
    {
        return link.call(Call.GRANT, out -> {
            RemoteWire.writeBytes(out, key);
            RemoteWire.writeEnum(out, access);
            out.writeLong(idOf(local));
            RemoteWire.writeInts(out, indices);
            out.writeInt(count);
        }, DataInputStream::readLong);
    }

    @Override
    public void revoke(long grant)
    {
        link.call(Call.REVOKE, out -> out.writeLong(grant), RemoteWire.NOTHING);
    }

    @Override
    public void notify(Peer peer, byte[] message)
    {
        link.call(Call.NOTIFY, out -> {
            out.writeLong(idOf(peer));
            RemoteWire.writeBytes(out, message);
        }, RemoteWire.NOTHING);
    }

    /** Drains in the child, then hands each notification to the sink here, in arrival order. */
    @Override
    public int drainNotifications(NotificationSink sink)
    {
        requireNonNull(sink, "sink is null");
        record Received(String sender, byte[] message)
        {
        }
        List<Received> received = new ArrayList<>();
        int drained = link.call(Call.DRAIN_NOTIFICATIONS, RemoteWire.NONE, in -> {
            int count = in.readInt();
            int entries = RemoteWire.readCount(in, RemoteWire.MAX_ITEMS, "notification count");
            for (int i = 0; i < entries; i++) {
                received.add(new Received(RemoteWire.readString(in), RemoteWire.readBytes(in)));
            }
            return count;
        });
        for (Received notification : received) {
            sink.accept(notification.sender(), notification.message());
        }
        return drained;
    }

    /**
     * The child gives its instance a thread of its own to wake, and reports each wake-up; this
     * process then unparks {@code waiter}. A wake-up arrives a little later than in one process,
     * and as in one process only says that something may have changed.
     */
    @Override
    public boolean wakeOnProgress(Thread waiter)
    {
        link.onWoken(waiter == null ? null : () -> LockSupport.unpark(waiter));
        boolean wakes = link.call(Call.WAKE_ON_PROGRESS, out -> out.writeBoolean(waiter != null), DataInputStream::readBoolean);
        if (!wakes) {
            link.onWoken(null);
        }
        return wakes;
    }

    @Override
    public Optional<String> problem()
    {
        return link.call(Call.PROBLEM, RemoteWire.NONE, in -> Optional.ofNullable(RemoteWire.readString(in)));
    }

    /**
     * Closes the instance in the child; the child runs on until the suite ends it, so later calls see
     * a closed instance. Once a call has reported the child dead there is nothing left to close.
     */
    @Override
    public void close()
    {
        if (!link.gone()) {
            link.call(Call.CLOSE, RemoteWire.NONE, RemoteWire.NOTHING);
        }
    }

    private long idOf(Peer peer)
    {
        if (peer == null) {
            return NULL;
        }
        return peer instanceof RemotePeer remote && remote.owner() == this ? remote.id() : FOREIGN;
    }

    private long idOf(PreparedList list)
    {
        if (list == null) {
            return NULL;
        }
        return list instanceof RemoteList remote && remote.owner() == this ? remote.id() : FOREIGN;
    }

    private UnsupportedOperationException notForwarded(String method)
    {
        return new UnsupportedOperationException(method + " is not forwarded to the target process (pid " + pid + "): the conformance suite calls it on "
                + "its initiator only; forward it in RemoteTransferBackend and RemoteTargetProcess if a test needs it of the target");
    }

    @Override
    public void copyFromHost(MemorySegment source, Allocation destination, long offset)
    {
        throw notForwarded("copyFromHost()");
    }

    @Override
    public void copyToHost(Allocation source, long offset, MemorySegment destination)
    {
        throw notForwarded("copyToHost()");
    }

    @Override
    public long post(TransferRequest request)
    {
        throw notForwarded("post()");
    }

    @Override
    public int operations(long handle)
    {
        throw notForwarded("operations()");
    }

    @Override
    public TransferStatus status(long handle)
    {
        throw notForwarded("status()");
    }

    @Override
    public Optional<io.kvbridge.spi.KvBridgeException> failure(long handle)
    {
        throw notForwarded("failure()");
    }

    @Override
    public void release(long handle)
    {
        throw notForwarded("release()");
    }

    @Override
    public BackendResources resources()
    {
        throw notForwarded("resources()");
    }

    @Override
    public String toString()
    {
        return "RemoteTransferBackend[" + name + " " + agentName + " in pid " + pid + "]";
    }
}
