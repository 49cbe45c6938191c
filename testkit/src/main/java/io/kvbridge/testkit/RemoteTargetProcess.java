package io.kvbridge.testkit;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.testkit.RemoteWire.Body;
import io.kvbridge.testkit.RemoteWire.Call;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The child JVM that holds a conformance suite's target when the suite runs it in a process of its
 * own ({@link TransferBackendConformanceFixture#targetInChildProcess()}): it reads calls from its
 * standard input, runs them on one transport instance, and writes the replies on its standard output
 * ({@link RemoteWire} frames; {@code System.out} is sent to standard error so nothing else lands
 * there). The instance is created as the suite creates one in its own process: an instance of the
 * test class, made here with its no-argument constructor, supplies the factory and the options.
 * Peers and prepared lists are kept by id until the process exits, so a list released twice reaches
 * the instance as the same object twice. When standard input ends, or the parent process exits, the
 * instance is closed and the process ends.
 */
public final class RemoteTargetProcess
{
    /** The exit status when the parent process went away without ending the child. */
    private static final int PARENT_GONE = 3;

    private final DataOutputStream replies;
    private final Map<Long, Peer> peers = new ConcurrentHashMap<>();
    private final Map<Long, PreparedList> lists = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private TransferBackend backend;
    private Thread wakeRelay;
    private volatile boolean relaying;

    /** Handed to the instance for ids of handles the test process did not get from it: the instance refuses them itself. */
    private static final Peer FOREIGN_PEER = () -> "a peer of no instance in the target process";
    private static final PreparedList FOREIGN_LIST = new PreparedList()
    {
        @Override
        public int size()
        {
            return 0;
        }

        @Override
        public MemoryKind kind()
        {
            return MemoryKind.HOST;
        }

        @Override
        public Peer peer()
        {
            return null;
        }
    };

    private RemoteTargetProcess(DataOutputStream replies)
    {
        this.replies = replies;
    }

    /**
     * Serves calls until standard input ends or the test process asks it to exit.
     *
     * @param args none.
     * @throws IOException when standard input or output fails.
     */
    public static void main(String[] args) throws IOException
    {
        DataOutputStream replies = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)));
        System.setOut(System.err);
        ProcessHandle.current().parent().ifPresent(parent -> parent.onExit().thenRun(() -> Runtime.getRuntime().halt(PARENT_GONE)));
        RemoteTargetProcess target = new RemoteTargetProcess(replies);
        try {
            target.serve(new DataInputStream(new BufferedInputStream(System.in)));
        }
        finally {
            target.closeBackend();
        }
        System.exit(0);
    }

    private void serve(DataInputStream requests) throws IOException
    {
        byte[] frame;
        while ((frame = RemoteWire.readFrame(requests)) != null) {
            DataInputStream request = RemoteWire.reader(frame);
            int id = request.readInt();
            Call call = Call.read(request);
            byte[] reply;
            try {
                Body result = run(call, request);
                RemoteWire.checkConsumed(request, "the arguments of " + call);
                reply = RemoteWire.body(out -> {
                    out.writeInt(id);
                    out.writeByte(RemoteWire.OK);
                    result.write(out);
                });
            }
            catch (Throwable failure) {
                if (!(failure instanceof io.kvbridge.spi.KvBridgeException)) {
                    System.err.println(call + " failed in the target process:");
                    failure.printStackTrace();
                }
                reply = RemoteWire.body(out -> {
                    out.writeInt(id);
                    RemoteWire.writeFailure(out, failure);
                });
            }
            send(reply);
            if (call == Call.EXIT) {
                return;
            }
        }
    }

    private synchronized void send(byte[] body) throws IOException
    {
        RemoteWire.writeFrame(replies, body);
    }

    /** Runs one call and returns what writes its result. */
    private Body run(Call call, DataInputStream in) throws Exception
    {
        if (call == Call.START) {
            return start(RemoteWire.readString(in), RemoteWire.readString(in));
        }
        if (call == Call.EXIT) {
            closeBackend();
            return RemoteWire.NONE;
        }
        if (backend == null) {
            throw new IllegalStateException(call + " before START: the test process creates the instance first");
        }
        switch (call) {
            case REGISTER -> backend.register(RemoteWire.readAllocation(in));
            case DEREGISTER -> backend.deregister(RemoteWire.readAllocation(in));
            case ALLOCATE -> {
                Allocation allocation = backend.allocate(in.readLong(), RemoteWire.readEnum(in, MemoryKind.class), in.readInt());
                return out -> RemoteWire.writeAllocation(out, allocation);
            }
            case ALLOCATE_SHARED -> {
                return allocateShared(in.readLong());
            }
            case LOCAL_METADATA -> {
                byte[] metadata = backend.localMetadata();
                return out -> RemoteWire.writeBytes(out, metadata);
            }
            case CONNECT -> {
                Peer peer = backend.connect(RemoteWire.readBytes(in));
                long id = keep(peers, peer);
                return out -> {
                    out.writeLong(id);
                    RemoteWire.writeString(out, peer.name());
                };
            }
            case DISCONNECT -> backend.disconnect(peer(in.readLong()));
            case PREPARE_LOCAL -> {
                return listReply(backend.prepareLocal(RemoteWire.readDescriptors(in)));
            }
            case PREPARE_REMOTE -> {
                Peer peer = peer(in.readLong());
                return listReply(backend.prepareRemote(peer, RemoteWire.readDescriptors(in)));
            }
            case RELEASE_PREPARED -> backend.releasePrepared(list(in.readLong()));
            case GRANT -> {
                byte[] key = RemoteWire.readBytes(in);
                TransferOp access = RemoteWire.readEnum(in, TransferOp.class);
                PreparedList local = list(in.readLong());
                long grant = backend.grant(key, access, local, RemoteWire.readInts(in), in.readInt());
                return out -> out.writeLong(grant);
            }
            case REVOKE -> backend.revoke(in.readLong());
            case NOTIFY -> {
                Peer peer = peer(in.readLong());
                backend.notify(peer, RemoteWire.readBytes(in));
            }
            case DRAIN_NOTIFICATIONS -> {
                return drain();
            }
            case WAKE_ON_PROGRESS -> {
                boolean wakes = wakeOnProgress(in.readBoolean());
                return out -> out.writeBoolean(wakes);
            }
            case PROBLEM -> {
                Optional<String> problem = backend.problem();
                return out -> RemoteWire.writeString(out, problem.orElse(null));
            }
            case CLOSE -> backend.close();
            default -> throw new IllegalStateException(call + " is not served here");
        }
        return RemoteWire.NONE;
    }

    private Body start(String testClassName, String agentName) throws ReflectiveOperationException
    {
        if (backend != null) {
            throw new IllegalStateException("START twice: this process holds " + backend.agentName() + " already");
        }
        Class<?> type = Class.forName(testClassName);
        if (!TransferBackendConformanceFixture.class.isAssignableFrom(type)) {
            throw new IllegalArgumentException(testClassName + " is no TransferBackendConformanceFixture");
        }
        Constructor<?> constructor = type.getDeclaredConstructor();
        constructor.setAccessible(true);
        TransferBackendConformanceFixture suite = (TransferBackendConformanceFixture) constructor.newInstance();
        backend = suite.newFactory().create(suite.config(), () -> agentName);
        long pid = ProcessHandle.current().pid();
        String name = backend.name();
        String agent = backend.agentName();
        return out -> {
            out.writeLong(pid);
            RemoteWire.writeString(out, name);
            RemoteWire.writeString(out, agent);
        };
    }

    /**
     * Allocates with the instance's {@code allocate(bytes, HOST, 0)} and names the descriptor behind
     * the memory; memory that has none is given back before the failure is reported.
     */
    private Body allocateShared(long bytes)
    {
        Allocation allocation = backend.allocate(bytes, MemoryKind.HOST, 0);
        SharedMappings.SharedFile file;
        try {
            file = SharedMappings.fileBehind(allocation.address(), allocation.bytes());
        }
        catch (RuntimeException e) {
            backend.deregister(allocation);
            throw e;
        }
        return out -> {
            RemoteWire.writeAllocation(out, allocation);
            out.writeInt(file.fd());
            out.writeLong(file.offset());
        };
    }

    private Body listReply(PreparedList list)
    {
        long id = keep(lists, list);
        return out -> {
            out.writeLong(id);
            out.writeInt(list.size());
            RemoteWire.writeEnum(out, list.kind());
        };
    }

    private Body drain()
    {
        List<String> senders = new ArrayList<>();
        List<byte[]> messages = new ArrayList<>();
        int drained = backend.drainNotifications((sender, message) -> {
            senders.add(sender);
            messages.add(message);
        });
        return out -> {
            out.writeInt(drained);
            out.writeInt(senders.size());
            for (int i = 0; i < senders.size(); i++) {
                RemoteWire.writeString(out, senders.get(i));
                RemoteWire.writeBytes(out, messages.get(i));
            }
        };
    }

    /** Gives the instance a thread of this process to wake, which reports every wake-up to the test process. */
    private boolean wakeOnProgress(boolean wanted)
    {
        if (!wanted) {
            relaying = false;
            return backend.wakeOnProgress(null);
        }
        if (wakeRelay == null) {
            wakeRelay = Thread.ofPlatform().daemon().name("remote-target-wake-relay").start(this::relayWakeUps);
        }
        relaying = true;
        boolean wakes = backend.wakeOnProgress(wakeRelay);
        relaying = wakes;
        return wakes;
    }

    private void relayWakeUps()
    {
        byte[] woken = RemoteWire.body(out -> {
            out.writeInt(RemoteWire.UNSOLICITED);
            out.writeByte(RemoteWire.WOKEN);
        });
        while (true) {
            LockSupport.park(this);
            if (relaying) {
                try {
                    send(woken);
                }
                catch (IOException gone) {
                    return;
                }
            }
        }
    }

    private <T> long keep(Map<Long, T> table, T handle)
    {
        long id = ids.incrementAndGet();
        table.put(id, handle);
        return id;
    }

    private Peer peer(long id)
    {
        return lookUp(peers, id, FOREIGN_PEER, "peer");
    }

    private PreparedList list(long id)
    {
        return lookUp(lists, id, FOREIGN_LIST, "prepared list");
    }

    private static <T> T lookUp(Map<Long, T> table, long id, T foreign, String what)
    {
        if (id == RemoteTransferBackend.NULL) {
            return null;
        }
        if (id == RemoteTransferBackend.FOREIGN) {
            return foreign;
        }
        T handle = table.get(id);
        if (handle == null) {
            throw new IllegalStateException("no " + what + " has id " + id + " in the target process");
        }
        return handle;
    }

    private void closeBackend()
    {
        if (backend != null) {
            backend.close();
        }
    }
}
