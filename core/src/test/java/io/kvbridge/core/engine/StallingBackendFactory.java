package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.fail;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.spi.transfer.WriteStop;
import io.kvbridge.testkit.ForwardingBackendFactory;
import io.kvbridge.testkit.ForwardingTransferBackend;
import io.kvbridge.transport.PeerProcesses;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Wraps another factory's transports to make late writers: a post of the chosen operation by an
 * agent whose name contains the chosen marker is stalled on the wire. It reports
 * {@code IN_PROGRESS} until {@link #resume()}, which then posts it for real, whether or not its
 * handle was released meanwhile, as a one-sided write already handed to a network card would land.
 * While a stalled post waits, releases of prepared lists and disconnects are held back, as the card
 * still holds what the write names. Optionally, the grants of chosen agents outlive their revoke,
 * as on a transport whose revoke does not stop a peer's writes ({@link WriteStop#AFTER_PROOF}).
 */
final class StallingBackendFactory extends ForwardingBackendFactory
{
    /** What a resumed post did. */
    record Landed(TransferOp op, TransferStatus status, ErrorCode failure)
    {
    }

    private final String stalledAgentPrefix;
    private final TransferOp stalledOp;
    private final String unrevokedAgentPrefix;
    // stalled handles are negative, so they never meet a real one
    private final AtomicLong nextFake = new AtomicLong(Long.MIN_VALUE / 2);
    private final Map<Long, Stall> stalls = new ConcurrentHashMap<>();
    private final List<Runnable> heldBack = new ArrayList<>();
    private volatile boolean stalling = true;
    private final List<String> agents = new CopyOnWriteArrayList<>();
    // answers writerExited for the agents that keep their grants, as a transport that knows its peers' processes would
    private volatile PeerProcesses writerProcesses;

    /**
     * @param stalledAgentPrefix agents whose name contains it post {@code stalledOp} stalled.
     * @param unrevokedAgentPrefix agents whose name contains it keep their grants past a revoke; null for none.
     */
    StallingBackendFactory(TransferBackendFactory delegate, String stalledAgentPrefix, TransferOp stalledOp, String unrevokedAgentPrefix)
    {
        super(delegate);
        this.stalledAgentPrefix = stalledAgentPrefix;
        this.stalledOp = stalledOp;
        this.unrevokedAgentPrefix = unrevokedAgentPrefix;
    }

    /** {@return the agent names of the instances made so far} */
    List<String> agents()
    {
        return List.copyOf(agents);
    }

    /** The instances whose grants outlive their revoke prove a peer's exit with these watches from now on. */
    void proveExitsWith(PeerProcesses processes)
    {
        writerProcesses = processes;
    }

    /** {@return how many posts are stalled and not yet resumed} */
    int stalled()
    {
        int count = 0;
        for (Stall stall : stalls.values()) {
            synchronized (stall) {
                count += stall.real == 0 && stall.landed == null ? 1 : 0;
            }
        }
        return count;
    }

    /**
     * Lets every stalled post move now, waits until each ended, and stops stalling later posts.
     *
     * @return what each did.
     */
    List<Landed> resume()
    {
        stalling = false;
        List<Landed> landed = new ArrayList<>();
        for (Map.Entry<Long, Stall> entry : List.copyOf(stalls.entrySet())) {
            Stall stall = entry.getValue();
            TransferBackend transport = stall.transport;
            long real;
            Landed outcome;
            try {
                real = transport.post(new TransferRequest().start(stall.op).local(stall.local, stall.localIndices)
                        .remote(stall.remote, stall.remoteIndices).count(stall.count).notification(stall.notification).grantKey(stall.grantKey));
                TransferStatus status = awaitEnd(transport, real);
                outcome = new Landed(stall.op, status, transport.failure(real).map(KvBridgeException::code).orElse(null));
            }
            catch (KvBridgeException e) {
                real = 0;
                outcome = new Landed(stall.op, TransferStatus.FAILED, e.code());
            }
            synchronized (stall) {
                stall.real = real;
                stall.landed = outcome;
                if (stall.released) {
                    stalls.remove(entry.getKey());
                    if (real != 0) {
                        transport.release(real);
                    }
                }
            }
            landed.add(outcome);
        }
        List<Runnable> held;
        synchronized (heldBack) {
            held = List.copyOf(heldBack);
            heldBack.clear();
        }
        held.forEach(Runnable::run);
        return landed;
    }

    private static TransferStatus awaitEnd(TransferBackend transport, long handle)
    {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() - deadline < 0) {
            TransferStatus status = transport.status(handle);
            if (status != TransferStatus.IN_PROGRESS) {
                return status;
            }
            Thread.onSpinWait();
        }
        return fail("a resumed post did not end within 10 s");
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        StallingBackend created = new StallingBackend(delegate.create(config, context));
        agents.add(created.agentName());
        return created;
    }

    /** A stalled post: what it names, copied, and, once resumed, its real handle. */
    private static final class Stall
    {
        final TransferBackend transport;
        final TransferOp op;
        final PreparedList local;
        final int[] localIndices;
        final PreparedList remote;
        final int[] remoteIndices;
        final int count;
        final byte[] notification;
        final byte[] grantKey;
        long real;
        boolean released;
        Landed landed;

        Stall(TransferBackend transport, TransferOp op, PreparedList local, int[] localIndices, PreparedList remote, int[] remoteIndices, int count,
                byte[] notification, byte[] grantKey)
        {
            this.transport = transport;
            this.op = op;
            this.local = local;
            this.localIndices = localIndices.clone();
            this.remote = remote;
            this.remoteIndices = remoteIndices.clone();
            this.count = count;
            this.notification = notification == null ? null : notification.clone();
            this.grantKey = grantKey == null ? null : grantKey.clone();
        }
    }

    private final class StallingBackend extends ForwardingTransferBackend
    {
        private final boolean stallsPosts;
        private final boolean keepsGrants;

        StallingBackend(TransferBackend delegate)
        {
            super(delegate);
            this.stallsPosts = delegate.agentName().contains(stalledAgentPrefix);
            this.keepsGrants = unrevokedAgentPrefix != null && delegate.agentName().contains(unrevokedAgentPrefix);
        }

        @Override
        public String writerExited(String peerAgent)
        {
            PeerProcesses processes = writerProcesses;
            return keepsGrants && processes != null ? processes.exited(peerAgent) : delegate().writerExited(peerAgent);
        }

        @Override
        public long post(TransferRequest request)
        {
            if (!stallsPosts || request.op() != stalledOp || !stalling) {
                return delegate().post(request);
            }
            long fake = nextFake.getAndIncrement();
            stalls.put(fake, new Stall(delegate(), request.op(), request.local(), request.localIndices(), request.remote(), request.remoteIndices(),
                    request.count(), request.notification(), request.grantKey()));
            return fake;
        }

        @Override
        public TransferStatus status(long handle)
        {
            Stall stall = StallingBackendFactory.this.stalls.get(handle);
            if (stall == null) {
                return delegate().status(handle);
            }
            synchronized (stall) {
                return stall.landed == null ? TransferStatus.IN_PROGRESS : stall.landed.status();
            }
        }

        @Override
        public Optional<KvBridgeException> failure(long handle)
        {
            Stall stall = StallingBackendFactory.this.stalls.get(handle);
            if (stall == null) {
                return delegate().failure(handle);
            }
            synchronized (stall) {
                return stall.real != 0 ? delegate().failure(stall.real)
                        : stall.landed != null ? Optional.of(new KvBridgeException(stall.landed.failure(), "the resumed post failed")) : Optional.empty();
            }
        }

        @Override
        public int operations(long handle)
        {
            return StallingBackendFactory.this.stalls.containsKey(handle) ? -1 : delegate().operations(handle);
        }

        @Override
        public void release(long handle)
        {
            Stall stall = StallingBackendFactory.this.stalls.get(handle);
            if (stall == null) {
                delegate().release(handle);
                return;
            }
            synchronized (stall) {
                stall.released = true;
                if (stall.landed != null) {
                    StallingBackendFactory.this.stalls.remove(handle);
                    if (stall.real != 0) {
                        delegate().release(stall.real);
                    }
                }
            }
        }

        @Override
        public void releasePrepared(PreparedList list)
        {
            if (!holdBack(() -> delegate().releasePrepared(list))) {
                delegate().releasePrepared(list);
            }
        }

        @Override
        public void disconnect(Peer peer)
        {
            if (!holdBack(() -> delegate().disconnect(peer))) {
                delegate().disconnect(peer);
            }
        }

        private boolean holdBack(Runnable action)
        {
            if (stalled() == 0) {
                return false;
            }
            synchronized (heldBack) {
                heldBack.add(action);
            }
            return true;
        }

        @Override
        public void revoke(long grant)
        {
            if (!keepsGrants) {
                delegate().revoke(grant);
            }
        }

        /** A post on the wire lands whatever the release: a transport like this proves nothing by releasing. */
        @Override
        public WriteStop writeStopOnRelease()
        {
            return stallsPosts ? WriteStop.AFTER_PROOF : delegate().writeStopOnRelease();
        }

        @Override
        public WriteStop writeStopOnRevoke()
        {
            return keepsGrants ? WriteStop.AFTER_PROOF : delegate().writeStopOnRevoke();
        }
    }
}
