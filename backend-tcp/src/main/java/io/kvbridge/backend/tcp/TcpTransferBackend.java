package io.kvbridge.backend.tcp;

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
import io.kvbridge.transport.Coverage;
import io.kvbridge.transport.Grants;
import io.kvbridge.transport.Inbox;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnerThread;
import io.kvbridge.transport.PostChecks;
import io.kvbridge.transport.RegionCover;
import io.kvbridge.transport.Registration;
import io.kvbridge.transport.Registrations;
import io.kvbridge.transport.TransferTable;
import io.kvbridge.transport.TransportTypes;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The {@code tcp} transport: one listener per instance, one connection to each peer it connects
 * to, and one owner thread ({@link TcpOwnerLoop}) that reads and writes every socket. This class
 * checks arguments and hands work over; the connections do the protocol
 * ({@link InitiatorConnection}, {@link TargetConnection}).
 *
 * <p>Threads: any thread may call any method; fields are final and thread-safe, or the owner's.
 */
final class TcpTransferBackend extends AbstractTransferBackend<TcpPeer, TcpPreparedList>
{
    private static final SecureRandom IDS = new SecureRandom();
    private static final Registration[] NO_REGISTRATIONS = new Registration[0];

    private final TcpOptions options;
    private final long instanceId;
    private final String advertisedHost;
    private final Registrations<TcpRegistration> registrations;
    private final TransferTable<TcpTransfer> transfers;
    private final Grants grants;
    // made once, not per revoke; an owner that stopped took its connections with it: nobody is left to cut off then
    private final Consumer<byte[]> cutOff;
    private final TcpOwnerLoop loop;
    private final OwnerThread owner;
    private final Map<Long, TcpPeer> peers = new HashMap<>();
    private final Inbox inbox;

    /**
     * @param connectionKey the key a peer's hello must prove, from the engines' shared secret; null
     *     without one, and then any peer that reaches the port is served (the engine keeps such a
     *     port on loopback).
     */
    TcpTransferBackend(String agentName, TcpOptions options, byte[] connectionKey)
    {
        InstanceGuard guard = new InstanceGuard(TcpBackendFactory.NAME, requireNonNull(agentName, "agentName is null"));
        TransferTable<TcpTransfer> table = new TransferTable<>(guard.description(), options.maxInFlight(), TcpTransfer::new);
        Inbox inbox = new Inbox();
        // a revoke returns once every write it admitted was received, or after its connection was cut off, and a release
        // sweeps the transfer on the owner before it returns (cancelRunning): only the owner lands bytes
        super(guard, new TransportTypes<>(TcpPeer.class, TcpPreparedList.class, TcpWire.MAX_NOTIFICATION_BYTES), table, inbox, WriteStop.ON_RETURN,
                WriteStop.ON_RETURN);
        this.options = options;
        this.inbox = inbox;
        this.instanceId = IDS.nextLong();
        this.advertisedHost = advertised(options);
        this.registrations = new Registrations<>(guard.description());
        this.transfers = table;
        this.grants = new Grants(guard.description());
        this.loop = new TcpOwnerLoop(guard.description(), agentName, instanceId, options, registrations, grants, inbox, table,
                new TcpHandshake(connectionKey));
        this.owner = loop.owner();
        this.cutOff = key -> owner.runUnlessStopped(() -> loop.cutOff(key));
        owner.start();
    }

    private static String advertised(TcpOptions options)
    {
        if (!options.advertiseHost().isEmpty()) {
            return options.advertiseHost();
        }
        try {
            InetAddress bound = InetAddress.getByName(options.host());
            if (!bound.isAnyLocalAddress()) {
                return options.host();
            }
            return InetAddress.getLocalHost().getHostAddress();
        }
        catch (UnknownHostException e) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "tcp host=" + options.host() + " cannot be resolved: " + e.getMessage()
                    + "; give an address, or advertise-host for peers", e);
        }
    }

    /** {@return the port this instance accepts connections on, opening its listener if it is not open} */
    int port()
    {
        return owner.call(loop::listen);
    }

    @Override
    public void register(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        guard.checkOpen();
        checkHost(allocation.kind(), allocation.device(), "register");
        registrations.add(new TcpRegistration(allocation));
    }

    /** Registrations are host memory: host copies are checked copies on the caller's thread. */
    @Override
    protected Registrations<?> hostCopies()
    {
        return registrations;
    }

    @Override
    public void deregister(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        guard.checkOpen();
        registrations.remove(allocation);
    }

    private static void checkHost(MemoryKind kind, int device, String what)
    {
        if (kind != MemoryKind.HOST || device != 0) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, String.format(Locale.ROOT,
                    "tcp moves host memory only, asked to %s %s memory of device %d; stage device memory through host memory or use a device transport",
                    what, kind, device));
        }
    }

    @Override
    public byte[] localMetadata()
    {
        guard.checkOpen();
        List<TcpMetadata.Region> regions = new ArrayList<>();
        for (TcpRegistration registration : registrations.all()) {
            regions.add(new TcpMetadata.Region(registration.allocation().address(), registration.allocation().bytes()));
        }
        // the listener opens here, for the first peer that can learn the port: an instance no peer is told of accepts nothing
        return new TcpMetadata(instanceId, guard.agentName(), advertisedHost, port(), regions).encode();
    }

    @Override
    public Peer connect(byte[] peerMetadata)
    {
        guard.checkOpen();
        TcpMetadata metadata = TcpMetadata.decode(peerMetadata);
        synchronized (peers) {
            TcpPeer known = peers.get(metadata.instanceId());
            if (known != null && known.unusableReason() == null) {
                known.refresh(metadata.regions());
                return known;
            }
            TcpPeer peer = new TcpPeer(guard, metadata);
            InetSocketAddress address = new InetSocketAddress(metadata.host(), metadata.port());
            if (address.isUnresolved()) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peer.name() + "' advertises host " + metadata.host()
                        + ", which does not resolve here");
            }
            InitiatorConnection connection = owner.call(() -> loop.open(peer, address));
            peer.connection = connection;
            String failure;
            try {
                failure = connection.awaitReady(TimeUnit.MILLISECONDS.toNanos(options.connectTimeoutMillis()));
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failure = "connect() was interrupted";
            }
            if (failure != null) {
                String reason = failure;
                closeConnection(connection, reason);
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, String.format(Locale.ROOT, "cannot connect to peer '%s' at %s: %s", peer.name(),
                        peer.address, reason));
            }
            peers.put(metadata.instanceId(), peer);
            return peer;
        }
    }

    private void closeConnection(TcpConnection connection, String reason)
    {
        try {
            owner.call(() -> {
                loop.close(connection, reason);
                return null;
            });
        }
        catch (KvBridgeException e) {
            // the owner stopped: its connections are closed already
        }
    }

    @Override
    protected void disconnectChecked(TcpPeer tcpPeer)
    {
        guard.checkOpen();
        tcpPeer.markUnusable("it was disconnected");
        synchronized (peers) {
            peers.remove(tcpPeer.instanceId, tcpPeer);
        }
        InitiatorConnection connection = tcpPeer.connection;
        if (connection != null) {
            closeConnection(connection, "it was disconnected");
        }
        lists.releaseAll(tcpPeer);
    }

    @Override
    public PreparedList prepareLocal(DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        guard.checkOpen();
        checkHost(descriptors.kind(), descriptors.device(), "prepare");
        Coverage coverage = registrations.cover(descriptors);
        return lists.add(new TcpPreparedList(guard, null, descriptors.addresses(), descriptors.lengths(), coverage.registrationIds(),
                coverage.registrations()));
    }

    @Override
    protected TcpPreparedList prepareRemoteChecked(TcpPeer tcpPeer, DescriptorList descriptors)
    {
        tcpPeer.checkUsable("connect() again");
        if (descriptors.kind() != MemoryKind.HOST) {
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "peer '" + tcpPeer.name() + "' advertises host memory only, got "
                    + descriptors.kind() + " descriptors");
        }
        List<TcpMetadata.Region> regions = tcpPeer.regions();
        long[] addresses = descriptors.addresses();
        long[] lengths = descriptors.lengths();
        RegionCover<TcpMetadata.Region> cover = RegionCover.of(addresses, lengths, TcpPeer.regionsOf(regions),
                (i, address, length) -> new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                        "descriptor %d (address=0x%x, length=%d) lies outside the %d regions peer '%s' advertised; if the peer registered "
                                + "more memory, connect() again with its new metadata", i, address, length, regions.size(), tcpPeer.name())));
        return lists.add(new TcpPreparedList(guard, tcpPeer, addresses, lengths, cover.regionIds(), NO_REGISTRATIONS));
    }

    @Override
    public long grant(byte[] key, TransferOp access, PreparedList local, int[] indices, int count)
    {
        TcpPreparedList list = ownList(local);
        guard.checkOpen();
        return grants.grant(key, access, list, indices, count);
    }

    /**
     * Waits up to {@code close-timeout-ms} for accesses admitted under the grant; peers still
     * reading or writing then are cut off (their connections closed) before this returns.
     */
    @Override
    public void revoke(long grant)
    {
        grants.revoke(grant, TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis()), cutOff);
    }

    @Override
    protected long postChecked(TransferRequest request, TcpPreparedList local, TcpPreparedList remote)
    {
        TcpTransfer transfer = transfers.acquire();
        try {
            transfer.prepare(this);
            PostChecks.resolve(transfer.copies, request, true);
            if (transfer.copies.size() > TcpWire.MAX_RUNS) {
                throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "a transfer of " + transfer.copies.size() + " runs exceeds " + TcpWire.MAX_RUNS
                        + "; post it as several transfers");
            }
            transfer.op = request.op();
            transfer.localList = local;
            transfer.peer = (TcpPeer) remote.transportPeer();
            transfer.notification.set(request.notification());
            transfer.grantKeyLength = PostChecks.copyGrantKey(request, transfer.grantKey);
            transfer.deadlineNanos = options.transferTimeoutMillis() == 0 ? 0
                    : (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.transferTimeoutMillis())) | 1;
        }
        catch (RuntimeException e) {
            transfers.abandon(transfer);
            throw e;
        }
        long handle = transfer.handle();
        owner.submit(transfer);
        return handle;
    }

    /** A posted transfer on the owner thread. */
    void start(TcpTransfer transfer)
    {
        loop.start(transfer);
    }

    /** The owner stopped before it reached a posted transfer. */
    void abandoned(TcpTransfer transfer, RuntimeException cause)
    {
        transfers.finish(transfer, cause instanceof KvBridgeException known ? known
                : new KvBridgeException(ErrorCode.TRANSFER_FAILED, "the transfer was never started: " + cause, cause));
    }

    /** A running transfer was released: the owner stops touching its memory before this returns. */
    @Override
    protected void cancelRunning()
    {
        try {
            owner.call(() -> {
                loop.sweep(System.nanoTime());
                return null;
            });
        }
        catch (KvBridgeException e) {
            // the owner stopped: nothing touches memory any more
        }
    }

    @Override
    protected void notifyChecked(TcpPeer tcpPeer, byte[] message)
    {
        byte[] copy = message.clone();
        owner.call(() -> {
            InitiatorConnection connection = tcpPeer.connection;
            String unusable = tcpPeer.unusableReason();
            if (unusable != null || connection == null || connection.closed()) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + tcpPeer.name() + "' cannot be used: "
                        + (unusable != null ? unusable : "it is not connected") + "; notification not sent");
            }
            connection.notification(copy, copy.length);
            connection.flush();
            return null;
        });
    }

    @Override
    protected BackendResources held(int unreleased)
    {
        int connected;
        synchronized (peers) {
            connected = peers.size();
        }
        return new BackendResources(registrations.size(), lists.size(), connected, unreleased);
    }

    /**
     * Whether this instance can serve: its owner thread runs. What peers did (refused accesses,
     * broken frames, connections that never proved who they are, notifications dropped) is counted,
     * logged and in {@link #peerReport()}, never here: anyone who reaches the port could otherwise
     * turn the engine's health false.
     */
    @Override
    protected Optional<String> workerProblem()
    {
        return owner.problem();
    }

    /** {@return what peers did that this instance refused, for diagnostics; empty when nothing} */
    Optional<String> peerReport()
    {
        String report = Stream.of(grants.problem(), loop.faults().report()).flatMap(Optional::stream).collect(Collectors.joining("; "));
        return report.isEmpty() ? Optional.empty() : Optional.of(report);
    }

    /** {@return the received notifications, for their bounds in tests} */
    Inbox inbox()
    {
        return inbox;
    }

    /** {@return the loop, for counts in tests} */
    TcpOwnerLoop loop()
    {
        return loop;
    }

    /** {@return the grants this instance checks peers against} */
    Grants grants()
    {
        return grants;
    }

    @Override
    protected void closeInstance()
    {
        loop.stop();
        owner.join(options.closeTimeoutMillis() + 5_000L);
        registrations.clear();
        synchronized (peers) {
            peers.values().forEach(peer -> peer.markUnusable("this transport was closed"));
            peers.clear();
        }
        lists.releaseAll(null);
    }
}
