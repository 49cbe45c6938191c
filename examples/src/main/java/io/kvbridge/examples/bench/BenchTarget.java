package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.KvBridge;
import io.kvbridge.core.config.Durations;
import io.kvbridge.core.config.Sizes;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.tools.ControlEnvelope;
import io.kvbridge.core.tools.ControlMessage;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The target of a two-host bench ({@code kvbridge bench --role target}): one transport instance
 * with one registered buffer, a control port that serves one initiator at a time, and the grants
 * that let the initiator READ and WRITE exactly that buffer under the key it sent. The target fills
 * the buffer with the pattern the initiator names before its READs and checks it after its WRITEs,
 * so a transfer that moved the wrong bytes cannot pass. Asked, it starts the C baselines' serving
 * ends for the initiator: the TCP stream's receiver (in the hello) and, for {@code ucx}, the UCX
 * probe's target (a {@code probe} request, after the transfers). It ends when an initiator says it is done,
 * or when {@code timeout} passes first. With TLS the control port serves TLS 1.3 only, each
 * handshake bounded by the deadline a new connection has to say hello.
 */
public final class BenchTarget
{
    private static final int MIN_GRANT_KEY_BYTES = 16;
    /**
     * How long a new connection may take to say hello, its TLS handshake included: one that says
     * nothing must not hold the target until its timeout.
     */
    private static final long HELLO_NANOS = 10_000_000_000L;

    /**
     * What the target runs with.
     *
     * @param transport the transport's name; it must cross processes.
     * @param listen the control port's address (port 0: any, printed).
     * @param bytes the buffer's size; initiators may use a prefix of it.
     * @param transportMemory whether host memory comes from the transport's {@code allocate()}.
     * @param device the device of device memory, or -1 for host memory.
     * @param options the transport's options.
     * @param timeout how long the whole run may take.
     * @param secret the shared secret of the control connection, or null for none.
     * @param compiler the C compiler of the TCP stream's and the UCX probe's serving ends.
     * @param tls the control port's TLS, with the certificate it serves, or null for plain TCP.
     */
    public record Settings(String transport, InetSocketAddress listen, long bytes, boolean transportMemory, int device, Map<String, String> options,
            Duration timeout, byte[] secret, String compiler, SideChannelTls tls)
    {
        /** Checks the values and copies the mutable ones. */
        public Settings
        {
            requireNonNull(transport, "transport is null");
            requireNonNull(listen, "listen is null");
            KvBridgeException.checkArgument(bytes > 0 && bytes % Long.BYTES == 0, "bytes=%d must be a positive multiple of 8", bytes);
            options = Map.copyOf(options);
            requireNonNull(timeout, "timeout is null");
            secret = secret == null ? null : secret.clone();
            requireNonNull(compiler, "compiler is null");
            KvBridgeException.checkArgument(tls == null || tls.hasKey(), "tls has no certificate and key to serve the control port with");
        }
    }

    private final Settings settings;
    private final PrintWriter progress;

    /**
     * Sets a target up; nothing starts before {@link #run}.
     *
     * @param settings what it runs with.
     * @param progress where its lines go.
     */
    public BenchTarget(Settings settings, PrintWriter progress)
    {
        this.settings = requireNonNull(settings, "settings is null");
        this.progress = requireNonNull(progress, "progress is null");
    }

    /**
     * Serves initiators until one finishes or the timeout passes.
     *
     * @return the initiator sessions served, at least 1.
     * @throws KvBridgeException with {@link ErrorCode#DEADLINE_EXCEEDED} when no initiator finished
     *     within the timeout, {@link ErrorCode#CONFIG_INVALID} when the port cannot be bound, or the
     *     transport's errors.
     */
    public int run()
    {
        long deadline = System.nanoTime() + settings.timeout().toNanos();
        ControlEnvelope authenticator = BenchLink.authenticator(settings.secret());
        Map<String, String> config = new HashMap<>(settings.options());
        if (settings.device() >= 0) {
            config.put("device", Integer.toString(settings.device()));
        }
        String host = settings.listen().getAddress() == null ? settings.listen().getHostString() : settings.listen().getAddress().getHostAddress();
        // the instance follows the control address as an engine's follows its side channel: ucx then listens on that interface only
        try (ServerSocket server = bind();
                KvBridge bridge = KvBridge.builder().transport(settings.transport()).agentName("bench-target-" + ProcessHandle.current().pid())
                        .transportConfig(config).environment(Map.of("KVBRIDGE_SIDE_CHANNEL_HOST", host)).build();
                BenchMemory memory = BenchMemory.allocate(bridge.transport(), settings.bytes(), settings.transportMemory(), settings.device())) {
            say("listening on %s:%d, transport %s, %s of %s memory%s%s; waiting up to %s for an initiator", host, server.getLocalPort(),
                    settings.transport(), Sizes.format(settings.bytes()), memory.onDevice() ? "device " + settings.device() : "host",
                    settings.tls() == null ? "" : ", control connection over TLS 1.3" + switch (settings.tls().clientAuth()) {
                        case REQUIRE -> " (client certificates required)";
                        case WANT -> " (client certificates asked for)";
                        case NONE -> "";
                    }, authenticator.authenticated() ? ", control messages authenticated" : "", Durations.format(settings.timeout()));
            int sessions = 0;
            while (true) {
                Socket socket = accept(server, deadline);
                sessions++;
                long helloDeadline = Math.min(deadline, System.nanoTime() + HELLO_NANOS);
                try (BenchLink link = BenchLink.accepted(socket, authenticator, helloDeadline)) {
                    if (new Session(link, bridge.transport(), memory, deadline, helloDeadline).serve()) {
                        say("initiator %s finished; done", link.peer());
                        return sessions;
                    }
                }
                catch (IOException | KvBridgeException e) {
                    // one initiator's failure is its own: the next one may still run, until the deadline
                    say("initiator session %d ended without finishing: %s", sessions, e.getMessage());
                }
            }
        }
        catch (IOException e) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "bench target: " + e.getMessage(), e);
        }
    }

    private ServerSocket bind()
    {
        ServerSocket server = null;
        try {
            server = settings.tls() == null ? new ServerSocket() : settings.tls().newServerSocket("bench target");
            server.setReuseAddress(true);
            server.bind(settings.listen(), 4);
            return server;
        }
        catch (IOException e) {
            if (server != null) {
                try {
                    server.close();
                }
                catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT,
                    "cannot listen on --listen=%s: %s (choose a free port, or 0 for any, on an address of this host)",
                    BenchLink.hostPort(settings.listen()), e.getMessage()), e);
        }
    }

    private Socket accept(ServerSocket server, long deadline) throws IOException
    {
        long left = deadline - System.nanoTime();
        if (left > 0) {
            server.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
            try {
                return server.accept();
            }
            catch (SocketTimeoutException e) {
                // reported below
            }
        }
        throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, String.format(Locale.ROOT,
                "no initiator finished within --timeout=%s; start `kvbridge bench --role initiator --peer HOST:%d` on the other host, or give a longer --timeout",
                Durations.format(settings.timeout()), server.getLocalPort()));
    }

    private void say(String format, Object... args)
    {
        progress.printf(Locale.ROOT, "kvbridge bench target: " + format + "%n", args);
        progress.flush();
    }

    /** One initiator's requests, each checked before anything acts on it. */
    private final class Session
    {
        private final BenchLink link;
        private final TransferBackend transport;
        private final BenchMemory memory;
        private final long deadline;
        private final long helloDeadline;
        private long used;
        // the UCX probe's target while the initiator runs the probe against it
        private BaselineServer probe;

        Session(BenchLink link, TransferBackend transport, BenchMemory memory, long deadline, long helloDeadline)
        {
            this.link = link;
            this.transport = transport;
            this.memory = memory;
            this.deadline = deadline;
            this.helloDeadline = helloDeadline;
        }

        /** @return true when the initiator said it was done. */
        boolean serve()
        {
            BenchLink.Received hello = link.receive(helloDeadline);
            if (hello == null) {
                return false;
            }
            byte[] key;
            try {
                key = checkHello(hello);
            }
            catch (KvBridgeException e) {
                link.refuse(e, hello);
                throw e;
            }
            PreparedList whole = transport.prepareLocal(DescriptorList.builder(memory.allocation().kind(), memory.allocation().device(), 1)
                    .add(memory.allocation().address(), used).build());
            long readGrant = TransferBackend.NO_GRANT;
            long writeGrant = TransferBackend.NO_GRANT;
            try (BaselineServer tcp = hello.message().optionalBoolean("tcp", false)
                    ? TcpStreamBaseline.serve(settings.compiler(), link.localHost(), used) : null) {
                readGrant = transport.grant(key, TransferOp.READ, whole, new int[] {0}, 1);
                writeGrant = transport.grant(key, TransferOp.WRITE, whole, new int[] {0}, 1);
                say("initiator %s (agent %s) connected; granted READ and WRITE of %s under its key%s; control connection: %s", link.peer(),
                        BenchLink.bounded(hello.message().requireString("agent")), Sizes.format(used),
                        readGrant == TransferBackend.NO_GRANT ? " (this transport does not check grants)" : "", link.security().describe());
                link.reply(ControlMessage.builder("ready").put("version", BenchLink.VERSION)
                        .put("transport", transport.name()).put("agent", transport.agentName())
                        .put("metadata", transport.localMetadata())
                        .put("address", memory.allocation().address()).put("bytes", used)
                        .put("device", memory.onDevice() ? memory.allocation().device() : -1)
                        .put("tcp_port", tcp == null || !tcp.available() ? 0 : tcp.port())
                        .put("tcp_reason", tcp == null ? "not asked for" : tcp.reason()).encode(), hello);
                return answer();
            }
            finally {
                if (probe != null) {
                    probe.close();
                }
                transport.revoke(readGrant);
                transport.revoke(writeGrant);
                transport.releasePrepared(whole);
            }
        }

        private byte[] checkHello(BenchLink.Received hello)
        {
            ControlMessage message = hello.message();
            KvBridgeException.check(hello.type().equals("hello"), ErrorCode.PROTOCOL_ERROR, "first message has type=%s (expected: hello)",
                    BenchLink.bounded(hello.type()));
            int version = message.requireInt("version");
            KvBridgeException.check(version == BenchLink.VERSION, ErrorCode.COMPATIBILITY_MISMATCH,
                    "initiator speaks bench protocol version=%d but this target speaks %d; run the same kvbridge on both hosts", version, BenchLink.VERSION);
            String theirs = message.requireString("transport");
            KvBridgeException.check(theirs.equals(settings.transport()), ErrorCode.COMPATIBILITY_MISMATCH,
                    "initiator uses transport=%s but this target runs %s; give both the same --transport", BenchLink.bounded(theirs), settings.transport());
            used = message.requireLong("total_bytes");
            KvBridgeException.check(used > 0 && used % Long.BYTES == 0 && used <= settings.bytes(), ErrorCode.INVALID_ARGUMENT,
                    "initiator asks for total_bytes=%d but this target holds %d; give the initiator at most the target's --total-bytes", used, settings.bytes());
            byte[] key = message.requireBinary("grant_key");
            KvBridgeException.check(key.length >= MIN_GRANT_KEY_BYTES && key.length <= TransferBackend.MAX_GRANT_KEY_BYTES, ErrorCode.PROTOCOL_ERROR,
                    "grant_key of %d bytes (expected: %d to %d random bytes)", key.length, MIN_GRANT_KEY_BYTES, TransferBackend.MAX_GRANT_KEY_BYTES);
            return key;
        }

        /** Fills and checks on request until the initiator is done. */
        private boolean answer()
        {
            while (true) {
                BenchLink.Received request = link.receive(deadline);
                if (request == null) {
                    throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, "initiator " + link.peer() + " closed the control connection before it was done");
                }
                switch (request.type()) {
                    case "fill" -> {
                        memory.fill(request.message().requireLong("seed"), used);
                        link.reply(ControlMessage.builder("filled").encode(), request);
                    }
                    case "check" -> {
                        long mismatch = memory.firstMismatch(request.message().requireLong("seed"), used);
                        link.reply(ControlMessage.builder("checked").put("mismatch", mismatch).encode(), request);
                    }
                    case "probe" -> {
                        startProbe();
                        link.reply(ControlMessage.builder("probe_ready").put("port", probe.port()).put("reason", probe.reason()).encode(), request);
                    }
                    case "done" -> {
                        link.reply(ControlMessage.builder("bye").encode(), request);
                        return true;
                    }
                    default -> {
                        KvBridgeException refused = new KvBridgeException(ErrorCode.PROTOCOL_ERROR,
                                "unknown request type=" + BenchLink.bounded(request.type()) + " (expected: fill, check, probe or done)");
                        link.refuse(refused, request);
                        throw refused;
                    }
                }
            }
        }

        /** Starts the UCX probe's target on the control address, on memory of the buffer's kind; a second request replaces the first's. */
        private void startProbe()
        {
            if (probe != null) {
                probe.close();
            }
            probe = transport.name().equals(UcxProbeBaseline.TRANSPORT)
                    ? UcxProbeBaseline.serve(settings.compiler(), link.localHost(), used, settings.transportMemory(), settings.options())
                    : BaselineServer.unavailable("the UCX probe is the baseline of the ucx transport, and this target runs " + transport.name());
            if (probe.available()) {
                say("UCX C probe target for initiator %s listening on port %d (%s)", link.peer(), probe.port(), UcxProbeBaseline.transports());
            }
            else {
                say("no UCX C probe target for initiator %s: %s", link.peer(), probe.reason());
            }
        }
    }
}
