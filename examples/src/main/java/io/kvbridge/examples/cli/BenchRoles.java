package io.kvbridge.examples.cli;

import io.kvbridge.api.PluginInfo;
import io.kvbridge.api.PluginKind;
import io.kvbridge.core.config.SecretFile;
import io.kvbridge.core.config.Sizes;
import io.kvbridge.core.config.TlsFiles;
import io.kvbridge.core.config.TlsLoader;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.examples.bench.BaselineResult;
import io.kvbridge.examples.bench.BenchInitiator;
import io.kvbridge.examples.bench.BenchTarget;
import io.kvbridge.examples.bench.ControlSecurity;
import io.kvbridge.examples.bench.MemcpyBaseline;
import io.kvbridge.examples.bench.TransportBench;
import io.kvbridge.examples.bench.UcxProbeBaseline;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.TransferOp;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The two-host mode of {@code kvbridge bench}, as NIXL's nixlbench has it: {@code --role target}
 * on one host holds a buffer and answers, {@code --role initiator} on the other READs and WRITEs
 * it and reports prepare, post and transfer times apart. Its options are a mixin of the bench
 * command; everything is checked here, before a socket is opened or memory allocated. The control
 * connection can run over TLS 1.3 with the side channel's TLS ({@code --tls-*}, named as
 * {@code kvbridge inspect} names them), beside or without the shared secret.
 */
final class BenchRoles
{
    /** Which side this process is. */
    enum Role
    {
        target,
        initiator,
    }

    /** Whether the target asks initiators for a certificate, as the side channel's {@code tls.client_auth}. */
    enum ClientCertificates
    {
        none(SideChannelTls.ClientAuth.NONE),
        want(SideChannelTls.ClientAuth.WANT),
        require(SideChannelTls.ClientAuth.REQUIRE);

        private final SideChannelTls.ClientAuth auth;

        ClientCertificates(SideChannelTls.ClientAuth auth)
        {
            this.auth = auth;
        }
    }

    /** The bench command's own values the roles use too. */
    record Common(List<Long> blockSizes, long totalBytes, int window, String compiler, Map<String, String> transportOptions, boolean json, int device)
    {
    }

    private static final Duration TARGET_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration INITIATOR_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration MAX_TIMEOUT = Duration.ofHours(24);
    private static final int MAX_BATCH = 1 << 16;
    private static final List<String> ROLE_OPTIONS = List.of("--listen", "--peer", "--transport", "--timeout", "--secret-file", "--tls-cert",
            "--tls-key", "--tls-ca", "--tls-client-auth", "--tls-no-verify-hostname");
    /** The loader names the side channel's configuration keys; here they are these options. */
    private static final Map<String, String> TLS_KEYS = Map.of("cert_file", "--tls-cert", "key_file", "--tls-key", "ca_file", "--tls-ca",
            "client_auth", "--tls-client-auth");

    @Spec(Spec.Target.MIXEE)
    private CommandSpec spec;

    @Option(names = "--role", paramLabel = "ROLE",
            description = "Two-host mode: target (holds a buffer, answers on --listen) or initiator (READs and WRITEs it from --peer): ${COMPLETION-CANDIDATES}.")
    private Role role;

    @Option(names = "--listen", paramLabel = "HOST:PORT", description = "With --role target: the control address initiators connect to (port 0: any, printed).")
    private String listen;

    @Option(names = "--peer", paramLabel = "HOST:PORT", description = "With --role initiator: the target's --listen address.")
    private String peer;

    @Option(names = "--transport", paramLabel = "NAME", defaultValue = "ucx",
            description = "With --role: the transport both sides use; it must cross processes (default: ${DEFAULT-VALUE}).")
    private String transport;

    @Option(names = "--batch", paramLabel = "N", split = ",", defaultValue = "1",
            description = "Descriptors (blocks) per post, dividing each block size's count; the one-process bench measures a row per value "
                    + "(e.g. 1,4,16), --role initiator takes one (default: ${DEFAULT-VALUE}).")
    private List<Integer> batches;

    @Option(names = "--timeout", paramLabel = "DURATION",
            description = "With --role: the target's whole run (default 10m), the initiator's deadline for each step, connecting included (default 30s).")
    private Duration timeout;

    @Option(names = "--secret-file", paramLabel = "FILE",
            description = "With --role: a shared secret (16 to 4096 bytes, readable by its owner only, the same on both hosts) authenticating every control message.")
    private Path secretFile;

    @Option(names = "--tls-cert", paramLabel = "FILE",
            description = "With --role target: PEM certificate chain the control port serves TLS 1.3 with (and --tls-key); with --role initiator: the one "
                    + "shown to a target that requires client certificates.")
    private Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE", description = "With --role: PKCS#8 PEM private key of --tls-cert (chmod 600).")
    private Path tlsKey;

    @Option(names = "--tls-ca", paramLabel = "FILE",
            description = "With --role initiator: PEM bundle of the CA that signed the target's certificate (connects over TLS 1.3); with --role target "
                    + "and --tls-client-auth: the CA that signs initiators' certificates.")
    private Path tlsCa;

    @Option(names = "--tls-client-auth", paramLabel = "MODE",
            description = "With --role target and --tls-cert: ${COMPLETION-CANDIDATES}; require is mutual TLS, every initiator shows a certificate "
                    + "--tls-ca signed (default: none).")
    private ClientCertificates tlsClientAuth;

    @Option(names = "--tls-no-verify-hostname", description = "With --role initiator: accept a target certificate that does not name the --peer host "
            + "(still signed by --tls-ca).")
    private boolean tlsNoVerifyHostname;

    /** {@return the transport both sides use} */
    String transport()
    {
        return transport;
    }

    /** {@return whether this process is the target, which takes no block sizes} */
    boolean target()
    {
        return role == Role.target;
    }

    /** {@return whether a role was asked for} */
    boolean active()
    {
        return role != null;
    }

    /** {@return the distinct --batch values, in the order given} */
    List<Integer> batches()
    {
        return List.copyOf(new java.util.LinkedHashSet<>(batches));
    }

    /**
     * Checks each batch as a post can carry it: within {@code [1, 65536]} and dividing the block count
     * of every block size.
     *
     * @param spec the command refusals are reported for.
     * @param batches the --batch values.
     * @param blockSizes the checked block sizes.
     * @param totalBytes the checked total.
     */
    static void checkBatches(CommandSpec spec, List<Integer> batches, List<Long> blockSizes, long totalBytes)
    {
        for (int batch : batches) {
            InputChecks.check(spec, batch >= 1 && batch <= MAX_BATCH, "--batch=%d is outside [1, %d]", batch, MAX_BATCH);
            for (long size : blockSizes) {
                long blocks = totalBytes / size;
                InputChecks.check(spec, blocks % batch == 0,
                        "--batch=%d does not divide the %d blocks of %s in --total-bytes=%s; give a batch that divides every block count",
                        batch, blocks, Sizes.format(size), Sizes.format(totalBytes));
            }
        }
    }

    /** Refuses the role options without a role, so that a forgotten --role does not run the one-process bench instead. */
    void refuseWithoutRole()
    {
        List<String> given = new ArrayList<>();
        for (String option : ROLE_OPTIONS) {
            if (given(option)) {
                given.add(option);
            }
        }
        InputChecks.check(spec, given.isEmpty(), "%s apply only with --role target or --role initiator (the one-process bench measures every transport)",
                String.join(", ", given));
    }

    /**
     * Checks the options and runs this process's role.
     *
     * @param common the bench command's checked values.
     * @return the exit code.
     */
    int run(Common common)
    {
        InputChecks.check(spec, role != Role.target || listen != null, "--role target needs --listen HOST:PORT, the address initiators connect to");
        InputChecks.check(spec, role != Role.initiator || peer != null, "--role initiator needs --peer HOST:PORT, the target's --listen address");
        InputChecks.check(spec, role != Role.target || peer == null, "--peer is the initiator's; a target takes --listen HOST:PORT");
        InputChecks.check(spec, role != Role.initiator || listen == null, "--listen is the target's; an initiator takes --peer HOST:PORT");
        InputChecks.check(spec, role != Role.target || !given("--batch"),
                "--batch is the initiator's: it decides what each post carries");
        InetSocketAddress address = role == Role.target ? InputChecks.address(spec, "--listen", listen, true) : InputChecks.address(spec, "--peer", peer, false);
        Duration deadline = InputChecks.within(spec, "--timeout", timeout == null ? (role == Role.target ? TARGET_TIMEOUT : INITIATOR_TIMEOUT) : timeout,
                Duration.ofMillis(100), MAX_TIMEOUT);
        InputChecks.check(spec, batches.size() == 1, "--batch=%s: --role initiator takes one value; the one-process bench sweeps a list",
                batches.stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(",")));
        int batch = batches.getFirst();
        checkBatches(spec, batches, common.blockSizes(), common.totalBytes());
        InputChecks.check(spec, common.totalBytes() % Long.BYTES == 0, "--total-bytes=%d is not a multiple of 8 bytes", common.totalBytes());
        byte[] secret = secret();
        SideChannelTls tls = tls();
        PluginInfo plugin = crossProcessTransport();
        checkDevice(plugin, common.device());
        PrintWriter progress = spec.commandLine().getErr();
        if (role == Role.target) {
            new BenchTarget(new BenchTarget.Settings(transport, address, common.totalBytes(), plugin.capabilities().contains(Capability.TRANSPORT_ALLOCATION),
                    common.device(), common.transportOptions(), deadline, secret, common.compiler(), tls), progress).run();
            return 0;
        }
        return initiate(common, address, deadline, secret, tls, plugin, progress);
    }

    private int initiate(Common common, InetSocketAddress address, Duration deadline, byte[] secret, SideChannelTls tls, PluginInfo plugin,
            PrintWriter progress)
    {
        int batch = batches.getFirst();
        boolean transportMemory = plugin.capabilities().contains(Capability.TRANSPORT_ALLOCATION);
        BenchInitiator.Settings settings = new BenchInitiator.Settings(transport, address, common.totalBytes(), common.window(), batch, transportMemory,
                common.device(), common.transportOptions(), deadline, secret, true, tls);
        boolean onDevice = common.device() >= 0;
        List<BenchInitiator.Row> rows = new ArrayList<>();
        BaselineResult tcp;
        BaselineResult memcpy;
        UcxProbeBaseline.TwoHosts probe;
        String target;
        String agent;
        String targetMemory;
        ControlSecurity control;
        try (BenchInitiator initiator = new BenchInitiator(settings, progress)) {
            target = initiator.target();
            agent = initiator.agent();
            control = initiator.control();
            targetMemory = initiator.targetMemory();
            if (onDevice) {
                // as the one-process bench's device rows: a copy between host buffers is no yardstick for device memory
                memcpy = BaselineResult.unavailable("this side's buffer is device memory, which a host memcpy says nothing about");
            }
            else {
                // after connecting, so that an unreachable target is refused at once
                progress.printf("kvbridge bench initiator: memcpy baseline (%s, single thread, this host) ...%n", common.compiler());
                progress.flush();
                memcpy = MemcpyBaseline.measure(common.compiler(), common.totalBytes(), common.blockSizes());
            }
            for (long size : common.blockSizes()) {
                for (TransferOp op : List.of(TransferOp.READ, TransferOp.WRITE)) {
                    progress.printf("kvbridge bench initiator: %s %s %s, batch %d ...%n", transport, op, Sizes.format(size), batch);
                    progress.flush();
                    rows.add(initiator.measure(op, size, TransportBench.TIMED_PASSES));
                }
            }
            progress.printf("kvbridge bench initiator: one TCP stream to the target (%s, two processes) ...%n", common.compiler());
            progress.flush();
            tcp = initiator.tcpStream(common.compiler(), common.blockSizes());
            if (transport.equals(UcxProbeBaseline.TRANSPORT)) {
                progress.printf("kvbridge bench initiator: UCX C probe to the target (%s, get and put, %s) ...%n", common.compiler(),
                        UcxProbeBaseline.transports());
                progress.flush();
            }
            probe = initiator.ucxProbe(common.compiler(), common.blockSizes());
        }
        String memory = onDevice ? "device " + common.device() : transportMemory ? "transport" : "process";
        InitiatorReport report = new InitiatorReport(transport, batch, common, target, agent, control, memory, targetMemory, driver(plugin, onDevice), rows,
                memcpy, tcp, probe);
        PrintWriter out = spec.commandLine().getOut();
        if (common.json()) {
            out.println(Json.write(report.document()));
        }
        else {
            report.print(out);
        }
        out.flush();
        return 0;
    }

    /**
     * {@return which driver moved device memory, or null for host memory} kvbridge's test fake of the
     * CUDA driver moves "device" memory with memmove on a thread: its figures say nothing about a GPU.
     */
    private static String driver(PluginInfo plugin, boolean onDevice)
    {
        if (!onDevice) {
            return null;
        }
        return "true".equals(plugin.details().get("fake")) ? "fake" : plugin.details().containsKey("driverVersion")
                ? "CUDA driver " + plugin.details().get("driverVersion") : null;
    }

    private byte[] secret()
    {
        if (secretFile == null) {
            return null;
        }
        // The same checks as an engine's secret file: owner-only permissions, one trailing line break dropped.
        List<String> problems = new ArrayList<>();
        byte[] secret = SecretFile.read("--secret-file", secretFile, problems);
        InputChecks.check(spec, problems.isEmpty(), "%s", String.join("; ", problems));
        return secret;
    }

    /**
     * Loads the control connection's TLS with the side channel's loader, so that the files are
     * checked as an engine's are (bounded reads, a key only its owner may read), every problem at once.
     *
     * @return the TLS, or null when no {@code --tls-*} option is given.
     */
    private SideChannelTls tls()
    {
        boolean target = role == Role.target;
        InputChecks.check(spec, !target || !tlsNoVerifyHostname, "--tls-no-verify-hostname is the initiator's: it relaxes the check of the target's certificate");
        InputChecks.check(spec, target || tlsClientAuth == null,
                "--tls-client-auth is the target's: it decides whether initiators must show a certificate (an initiator shows one with --tls-cert and --tls-key)");
        if (tlsCert == null && tlsKey == null && tlsCa == null && tlsClientAuth == null) {
            InputChecks.check(spec, !tlsNoVerifyHostname, "--tls-no-verify-hostname applies only over TLS: give --tls-ca FILE, the CA that signed the target's certificate");
            return null;
        }
        InputChecks.check(spec, !target || tlsCert != null && tlsKey != null,
                "--role target serves TLS with --tls-cert FILE and --tls-key FILE; give both (missing: %s)", tlsCert == null && tlsKey == null
                        ? "--tls-cert, --tls-key" : tlsCert == null ? "--tls-cert" : "--tls-key");
        List<String> problems = new ArrayList<>();
        SideChannelTls tls = TlsLoader.load(new TlsFiles(tlsCert, tlsKey, null, null, tlsCa, null, null, tlsClientAuth == null ? null : tlsClientAuth.auth,
                tlsNoVerifyHostname ? false : null), problems);
        InputChecks.check(spec, problems.isEmpty(), "TLS options refused: %s", problems.stream().map(BenchRoles::optionNames).collect(Collectors.joining("; ")));
        return tls;
    }

    /** {@return a loader's problem with the configuration keys it names written as these options} */
    private static String optionNames(String problem)
    {
        String named = problem.replace("kv_connector_extra_config.tls.", "tls.").replace(" or tls.truststore_file", "");
        for (Map.Entry<String, String> key : TLS_KEYS.entrySet()) {
            named = named.replace("tls." + key.getKey(), key.getValue());
        }
        return named;
    }

    private boolean given(String option)
    {
        return spec.commandLine().getParseResult().hasMatchedOption(option);
    }

    /** Refuses device memory a transport cannot give this side, as the demo does, before anything is allocated. */
    private void checkDevice(PluginInfo plugin, int device)
    {
        if (device < 0) {
            return;
        }
        InputChecks.check(spec, plugin.capabilities().containsAll(List.of(Capability.DEVICE_MEMORY, Capability.TRANSPORT_ALLOCATION)),
                "--device=%d needs a transport that allocates device memory (cuda-ipc); --transport=%s keeps this side's buffer in host memory, so give no"
                        + " --device", device, transport);
        String devices = plugin.details().get("devices");
        int count = devices == null ? Integer.MAX_VALUE : Integer.parseInt(devices);
        InputChecks.check(spec, device < count, "--device=%d is not a device '%s' sees (it sees %s: 0 to %d)", device, transport, devices, count - 1);
    }

    /** @return the transport, refused unless it was discovered, can run here and reaches peers in other processes. */
    private PluginInfo crossProcessTransport()
    {
        List<PluginInfo> transports = PluginRegistry.discover(BenchRoles.class.getClassLoader()).describe().stream()
                .filter(plugin -> plugin.kind() == PluginKind.TRANSPORT).toList();
        PluginInfo plugin = transports.stream().filter(candidate -> candidate.name().equals(transport)).findFirst().orElse(null);
        String crossing = transports.stream().filter(candidate -> candidate.capabilities().contains(Capability.CROSS_PROCESS)).map(PluginInfo::name)
                .collect(Collectors.joining(", "));
        InputChecks.check(spec, plugin != null, "--transport=%s is not a discovered transport; give one of %s", transport,
                transports.stream().map(PluginInfo::name).collect(Collectors.joining(", ")));
        // an unavailable transport reports no capabilities: why it cannot run comes first
        InputChecks.check(spec, plugin.available(), "--transport=%s cannot run here: %s", transport, String.join("; ", plugin.reasons()));
        InputChecks.check(spec, plugin.capabilities().contains(Capability.CROSS_PROCESS),
                "--transport=%s cannot cross processes (its peers live in one JVM), so it cannot run between two hosts; give one that can: %s", transport,
                crossing.isEmpty() ? "none is on the class path" : crossing);
        return plugin;
    }
}
