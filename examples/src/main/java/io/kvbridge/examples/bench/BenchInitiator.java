package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.KvBridge;
import io.kvbridge.core.config.Sizes;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.tools.ControlMessage;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The initiator of a two-host bench ({@code kvbridge bench --role initiator}): connects to a
 * target's control port, sends it a fresh grant key, connects its own transport instance to the
 * target's, and for each block size READs the target's buffer into its own, then WRITEs its own into
 * the target's, {@code batch} blocks per transfer and {@code window} transfers in flight. Before each
 * READ pass the target fills its buffer with a new pattern, which the initiator checks after the pass;
 * before each WRITE pass the initiator fills its own, which the target checks. Every step has the
 * same deadline: the connection, each answer and each transfer.
 */
public final class BenchInitiator implements AutoCloseable
{
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int GRANT_KEY_BYTES = 32;

    /**
     * What the initiator runs with.
     *
     * @param transport the transport's name; the target must run the same.
     * @param peer the target's control address.
     * @param totalBytes bytes moved per block size and operation, at most the target's buffer.
     * @param window transfers in flight.
     * @param batch descriptors (blocks) per transfer.
     * @param transportMemory whether host memory comes from the transport's {@code allocate()}.
     * @param device the device of device memory, or -1 for host memory.
     * @param options the transport's options.
     * @param timeout the deadline of each step.
     * @param secret the shared secret of the control connection, or null for none.
     * @param tcpBaseline whether to ask the target for the TCP stream baseline.
     * @param tls the TLS the control connection uses (what it trusts, and this side's certificate
     *     for a target that requires one), or null for plain TCP.
     */
    public record Settings(String transport, InetSocketAddress peer, long totalBytes, int window, int batch, boolean transportMemory, int device,
            Map<String, String> options, Duration timeout, byte[] secret, boolean tcpBaseline, SideChannelTls tls)
    {
        /** Checks the values and copies the mutable ones. */
        public Settings
        {
            requireNonNull(transport, "transport is null");
            requireNonNull(peer, "peer is null");
            KvBridgeException.checkArgument(totalBytes > 0 && totalBytes % Long.BYTES == 0, "totalBytes=%d must be a positive multiple of 8", totalBytes);
            KvBridgeException.checkArgument(window > 0 && batch > 0, "window=%d and batch=%d must be positive", window, batch);
            options = Map.copyOf(options);
            requireNonNull(timeout, "timeout is null");
            secret = secret == null ? null : secret.clone();
        }
    }

    /**
     * One measured block size and operation; times are of the fastest timed pass.
     *
     * @param op READ or WRITE.
     * @param blockBytes bytes per block (per descriptor).
     * @param batch descriptors per transfer.
     * @param transfers transfers per pass.
     * @param gigabytesPerSecond total bytes over the pass's wall time, first post to last completion.
     * @param prepareMicros building both descriptor lists and preparing them ({@code prepareLocal},
     *     {@code prepareRemote}), once per block size.
     * @param postP50Micros median of one {@code post()} call.
     * @param postP99Micros 99th percentile of it.
     * @param transferP50Micros median from a transfer's {@code post()} to its completion seen.
     * @param transferP99Micros 99th percentile of it.
     */
    public record Row(TransferOp op, long blockBytes, int batch, int transfers, double gigabytesPerSecond, double prepareMicros, double postP50Micros,
            double postP99Micros, double transferP50Micros, double transferP99Micros)
    {
    }

    private final Settings settings;
    private final PrintWriter progress;
    private final BenchLink link;
    private final KvBridge bridge;
    private final TransferBackend transport;
    private final BenchMemory memory;
    private final byte[] grantKey = new byte[GRANT_KEY_BYTES];
    private final Allocation remote;
    private final Peer peer;
    private final String targetHost;
    private final int tcpPort;
    private final String tcpReason;
    private long seed;

    /**
     * Connects to the target and sets both sides up: after it returns the target has granted this
     * initiator its buffer and the transports are connected.
     *
     * @param settings what to run with.
     * @param progress where progress lines go.
     * @throws KvBridgeException with {@link ErrorCode#PEER_UNKNOWN} when no target answered within
     *     the timeout, the target's refusal, or the transport's errors.
     */
    public BenchInitiator(Settings settings, PrintWriter progress)
    {
        this.settings = requireNonNull(settings, "settings is null");
        this.progress = requireNonNull(progress, "progress is null");
        RANDOM.nextBytes(grantKey);
        this.link = BenchLink.connect(settings.peer(), settings.timeout(), BenchLink.authenticator(settings.secret()), settings.tls());
        KvBridge built = null;
        BenchMemory allocated = null;
        try {
            Map<String, String> config = new HashMap<>(settings.options());
            if (settings.device() >= 0) {
                config.put("device", Integer.toString(settings.device()));
            }
            // the instance follows the interface that reaches the target, as an engine's follows its side channel
            built = KvBridge.builder().transport(settings.transport()).agentName("bench-initiator-" + ProcessHandle.current().pid())
                    .transportConfig(config).environment(Map.of("KVBRIDGE_SIDE_CHANNEL_HOST", link.localHost())).build();
            this.bridge = built;
            this.transport = built.transport();
            allocated = BenchMemory.allocate(transport, settings.totalBytes(), settings.transportMemory(), settings.device());
            this.memory = allocated;
            ControlMessage ready = link.call(ControlMessage.builder("hello").put("version", BenchLink.VERSION)
                    .put("transport", settings.transport()).put("agent", transport.agentName())
                    .put("total_bytes", settings.totalBytes()).put("grant_key", grantKey)
                    .put("tcp", settings.tcpBaseline()).encode(), "ready", settings.timeout());
            this.remote = checkReady(ready);
            this.targetHost = settings.peer().getAddress() == null ? settings.peer().getHostString() : settings.peer().getAddress().getHostAddress();
            this.tcpPort = ready.requireInt("tcp_port");
            KvBridgeException.check(tcpPort >= 0 && tcpPort <= 65535, ErrorCode.PROTOCOL_ERROR, "target's tcp_port=%d is not a port", tcpPort);
            this.tcpReason = ready.optionalString("tcp_reason", "");
            this.peer = transport.connect(ready.requireBinary("metadata"));
            say("connected to target %s (agent %s): %s of %s memory granted; control connection: %s", link.peer(),
                    BenchLink.bounded(ready.requireString("agent")), Sizes.format(remote.bytes()),
                    remote.kind() == MemoryKind.DEVICE ? "device " + remote.device() : "host", link.security().describe());
        }
        catch (RuntimeException e) {
            closeAll(allocated, built, e);
            throw e;
        }
    }

    private Allocation checkReady(ControlMessage ready)
    {
        String transportName = ready.requireString("transport");
        KvBridgeException.check(transportName.equals(settings.transport()), ErrorCode.COMPATIBILITY_MISMATCH,
                "target runs transport=%s but this initiator %s; give both the same --transport", BenchLink.bounded(transportName), settings.transport());
        long bytes = ready.requireLong("bytes");
        KvBridgeException.check(bytes == settings.totalBytes(), ErrorCode.PROTOCOL_ERROR,
                "target granted bytes=%d but this initiator asked for %d", bytes, settings.totalBytes());
        int device = ready.requireInt("device");
        // the record checks the range: an address and size that overflow are refused here, not at the first transfer
        return new Allocation(ready.requireLong("address"), bytes, device < 0 ? MemoryKind.HOST : MemoryKind.DEVICE, Math.max(0, device));
    }

    /**
     * Measures one block size for one operation: an untimed pass, then {@code timedPasses} timed
     * ones, each checked; the fastest is the figure.
     *
     * @param op READ or WRITE.
     * @param blockBytes bytes per block; with the batch it must divide the total.
     * @param timedPasses timed passes.
     * @return the figures.
     * @throws KvBridgeException with {@link ErrorCode#TRANSFER_FAILED} when a check finds bytes that
     *     differ, {@link ErrorCode#DEADLINE_EXCEEDED} when a step passes its deadline, or the
     *     transport's and the target's errors.
     */
    public Row measure(TransferOp op, long blockBytes, int timedPasses)
    {
        long blockCount = settings.totalBytes() / blockBytes;
        KvBridgeException.checkArgument(blockBytes > 0 && settings.totalBytes() % blockBytes == 0 && blockCount % settings.batch() == 0
                && blockCount <= Integer.MAX_VALUE, "blockBytes=%d x batch=%d must divide totalBytes=%d", blockBytes, settings.batch(), settings.totalBytes());
        int blocks = (int) blockCount;
        long prepareStart = System.nanoTime();
        PreparedList local = transport.prepareLocal(TransportBench.blocksOf(memory.allocation(), blocks, blockBytes));
        try {
            PreparedList remoteList = transport.prepareRemote(peer, TransportBench.blocksOf(remote, blocks, blockBytes));
            long prepareNanos = System.nanoTime() - prepareStart;
            try {
                TransferStream stream = new TransferStream(transport, op, blocks, settings.batch(), settings.window(), settings.timeout().toNanos(), grantKey);
                long best = Long.MAX_VALUE;
                long[] posts = null;
                long[] transfers = null;
                for (int pass = -1; pass < timedPasses; pass++) {
                    long elapsed = checkedPass(op, blockBytes, stream, local, remoteList);
                    if (pass >= 0 && elapsed < best) {
                        best = elapsed;
                        posts = stream.sortedPostNanos();
                        transfers = stream.sortedTransferNanos();
                    }
                }
                return new Row(op, blockBytes, settings.batch(), stream.transfers(), settings.totalBytes() / (best / 1e9) / 1e9, prepareNanos / 1e3,
                        TransferStream.percentile(posts, 0.50) / 1e3, TransferStream.percentile(posts, 0.99) / 1e3,
                        TransferStream.percentile(transfers, 0.50) / 1e3, TransferStream.percentile(transfers, 0.99) / 1e3);
            }
            finally {
                transport.releasePrepared(remoteList);
            }
        }
        finally {
            transport.releasePrepared(local);
        }
    }

    /** One pass with a pattern of its own, checked where it landed; returns the pass's nanoseconds. */
    private long checkedPass(TransferOp op, long blockBytes, TransferStream stream, PreparedList local, PreparedList remoteList)
    {
        long passSeed = ++seed;
        long total = settings.totalBytes();
        if (op == TransferOp.READ) {
            link.call(ControlMessage.builder("fill").put("seed", passSeed).encode(), "filled", settings.timeout());
            memory.clear();
        }
        else {
            memory.fill(passSeed, total);
        }
        long elapsed = stream.pass(local, remoteList);
        long mismatch = op == TransferOp.READ ? memory.firstMismatch(passSeed, total)
                : link.call(ControlMessage.builder("check").put("seed", passSeed).encode(), "checked",
                        settings.timeout()).requireLong("mismatch");
        if (mismatch >= 0) {
            throw new KvBridgeException(ErrorCode.TRANSFER_FAILED, String.format(Locale.ROOT,
                    "%s blockBytes=%d batch=%d: the %s's buffer differs from what was sent at byte offset=%d after every transfer reported done",
                    op, blockBytes, settings.batch(), op == TransferOp.READ ? "initiator" : "target", mismatch));
        }
        return elapsed;
    }

    /**
     * Runs the sending end of the TCP stream baseline against the receiver the target started, or
     * says why there is none.
     *
     * @param compiler the C compiler command.
     * @param blockSizes the block sizes.
     * @return the figures, or the reason there are none.
     */
    public BaselineResult tcpStream(String compiler, List<Long> blockSizes)
    {
        if (tcpPort == 0) {
            return BaselineResult.unavailable("the target started no TCP stream receiver: " + tcpReason);
        }
        return TcpStreamBaseline.measureTo(compiler, targetHost, tcpPort, settings.totalBytes(), new ArrayList<>(blockSizes));
    }

    /**
     * Runs the UCX probe's initiator against the probe target the target starts when asked, with
     * this run's block sizes, total, window and batch, or says why there is none.
     *
     * @param compiler the C compiler command.
     * @param blockSizes the block sizes.
     * @return the figures, or the reason there are none.
     * @throws KvBridgeException the control connection's errors, as every request's.
     */
    public UcxProbeBaseline.TwoHosts ucxProbe(String compiler, List<Long> blockSizes)
    {
        if (!settings.transport().equals(UcxProbeBaseline.TRANSPORT)) {
            return UcxProbeBaseline.TwoHosts.unavailable("the C probe is the baseline of the ucx transport, and this run's is " + settings.transport());
        }
        ControlMessage ready = link.call(ControlMessage.builder("probe").encode(), "probe_ready", settings.timeout());
        int port = ready.requireInt("port");
        KvBridgeException.check(port >= 0 && port <= 65535, ErrorCode.PROTOCOL_ERROR, "target's probe port=%d is not a port", port);
        if (port == 0) {
            return UcxProbeBaseline.TwoHosts.unavailable("the target started no UCX probe: " + BenchLink.bounded(ready.optionalString("reason", "no reason given")));
        }
        return UcxProbeBaseline.measureTo(compiler, targetHost, port, settings.totalBytes(), new ArrayList<>(blockSizes), settings.transportMemory(),
                settings.window(), settings.batch(), link.localHost(), settings.options());
    }

    /** {@return the target's control address, for reports} */
    public String target()
    {
        return link.peer();
    }

    /** {@return the target's buffer: {@code device N} or {@code host}} */
    public String targetMemory()
    {
        return remote.kind() == MemoryKind.DEVICE ? "device " + remote.device() : "host";
    }

    /** {@return how the control connection to the target is protected} */
    public ControlSecurity control()
    {
        return link.security();
    }

    /** {@return this initiator's transport agent} */
    public String agent()
    {
        return transport.agentName();
    }

    private void say(String format, Object... args)
    {
        progress.printf(Locale.ROOT, "kvbridge bench initiator: " + format + "%n", args);
        progress.flush();
    }

    /** Tells the target the run is over (it then ends), and releases this side. */
    @Override
    public void close()
    {
        RuntimeException failure = null;
        try {
            link.call(ControlMessage.builder("done").encode(), "bye", settings.timeout());
        }
        catch (RuntimeException e) {
            failure = e;
        }
        try {
            transport.disconnect(peer);
        }
        catch (RuntimeException e) {
            failure = addTo(failure, e);
        }
        failure = closeAll(memory, bridge, failure);
        if (failure != null) {
            throw failure;
        }
    }

    /** Closes this side's parts in order; {@return the first failure, later ones suppressed into it} */
    private RuntimeException closeAll(BenchMemory allocated, KvBridge built, RuntimeException failure)
    {
        try {
            if (allocated != null) {
                allocated.close();
            }
        }
        catch (RuntimeException e) {
            failure = addTo(failure, e);
        }
        try {
            if (built != null) {
                built.close();
            }
        }
        catch (RuntimeException e) {
            failure = addTo(failure, e);
        }
        link.close();
        return failure;
    }

    private static RuntimeException addTo(RuntimeException failure, RuntimeException e)
    {
        if (failure == null) {
            return e;
        }
        failure.addSuppressed(e);
        return failure;
    }
}
