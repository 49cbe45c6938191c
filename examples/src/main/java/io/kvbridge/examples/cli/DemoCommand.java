package io.kvbridge.examples.cli;

import io.kvbridge.api.Integrity;
import io.kvbridge.core.config.Sizes;
import io.kvbridge.core.plugin.DiscoveredTransport;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.core.tools.SideChannelDefaults;
import io.kvbridge.examples.demo.DemoFailure;
import io.kvbridge.examples.demo.DemoHosts;
import io.kvbridge.examples.demo.DemoModel;
import io.kvbridge.examples.demo.DemoOptions;
import io.kvbridge.examples.demo.DemoRun;
import io.kvbridge.examples.demo.MetricsEndpoint;
import io.kvbridge.examples.demo.StallFault;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.discovery.DirectoryConfig;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.Capability;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvbridge demo}: a producer (prefill) engine and a decoder engine of a synthetic 30-layer
 * model, in one process or with every producer stage and the decoder in a JVM of its own, moving every
 * request's KV cache through the engines' connectors and checking every byte (see {@link DemoRun});
 * ends with an audit, as text or JSON, and a non-zero exit code if anything failed.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, description = "Run a prefill and a decode engine, move every request's KV cache and audit it.")
final class DemoCommand implements Callable<Integer>
{
    @Spec
    private CommandSpec spec;

    /** How the decoder gets each request's cache. */
    enum Mode
    {
        PUSH, PULL, MIXED;

        @Override
        public String toString()
        {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** The cache layout both engines describe their caches with. */
    enum Layout
    {
        HMA, MLA, PER_LAYER;

        @Override
        public String toString()
        {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    /** What both engines' caches may take together; the demo runs on one machine. */
    private static final long MAX_CACHE_BYTES = 8L << 30;
    /** How long an etcd endpoint of --discovery has to accept a connection before the demo refuses to start. */
    private static final int DISCOVERY_PROBE_MILLIS = 1_000;
    /** 32 x 32 ranks handshake within the deadline on two cores; 64 x 64 does not. */
    private static final int MAX_RANK_PAIRS = 1024;

    @Option(names = "--mode", paramLabel = "MODE", defaultValue = "push",
            description = "${COMPLETION-CANDIDATES}; mixed alternates per request (default: ${DEFAULT-VALUE}).")
    private Mode mode;

    @Option(names = "--backend", paramLabel = "TRANSPORT", defaultValue = "local", completionCandidates = TransportNames.class,
            description = "Transport, one of the discovered: ${COMPLETION-CANDIDATES} ('kvbridge plugins' says which can run here) "
                    + "(default: ${DEFAULT-VALUE}).")
    private String backend;

    @Option(names = "--layout", paramLabel = "LAYOUT", defaultValue = "hma",
            description = "Cache layout: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    private Layout layout;

    @Option(names = "--model", paramLabel = "MODEL", defaultValue = DemoModel.DEFAULT,
            description = "Model: default (30 layers, attention; the layout's model) or hybrid-ssm (36 layers, one attention layer in four, the rest "
                    + "Mamba-2 with fp32 SSM state) (default: ${DEFAULT-VALUE}).")
    private String model;

    @Option(names = "--producer-pp", paramLabel = "N", defaultValue = "2", description = "Producer pipeline stages (default: ${DEFAULT-VALUE}; "
            + "--engine jlama: prefill JVMs, each registering only its share of the layers, 1 unless given).")
    private int producerPp;

    @Option(names = "--producer-tp", paramLabel = "N", defaultValue = "1", description = "Producer tensor-parallel ranks (default: ${DEFAULT-VALUE}).")
    private int producerTp;

    @Option(names = "--consumer-pp", paramLabel = "N", defaultValue = "1", description = "Decoder pipeline stages (default: ${DEFAULT-VALUE}).")
    private int consumerPp;

    @Option(names = "--consumer-tp", paramLabel = "N", defaultValue = "1", description = "Decoder tensor-parallel ranks (default: ${DEFAULT-VALUE}).")
    private int consumerTp;

    @Option(names = "--requests", paramLabel = "N", defaultValue = "200", description = "Requests to move (default: ${DEFAULT-VALUE}).")
    private int requests;

    /** --kv-planes, --placement, --block-tokens and --kernel-block-tokens, declared here so that help and completion keep their order. */
    @Mixin
    private DemoCacheShapes cacheShapes;

    /** --stream-layers and --layer-compute. */
    @Mixin
    private DemoStreaming streaming;

    @Option(names = "--concurrency", paramLabel = "N", defaultValue = "8", description = "Requests in flight (default: ${DEFAULT-VALUE}).")
    private int concurrency;

    @Option(names = "--max-tokens", paramLabel = "TOKENS", defaultValue = "8192",
            description = "Longest prompt; lengths are drawn from 1 to this (default: ${DEFAULT-VALUE}).")
    private int maxTokens;

    @Option(names = "--seed", paramLabel = "SEED", defaultValue = "42", description = "Random seed of the prompt lengths (default: ${DEFAULT-VALUE}).")
    private long seed;

    @Option(names = "--idle-seconds", paramLabel = "SECONDS", defaultValue = "3", converter = ParsedTextConverter.SecondsConverter.class,
            description = "Wait after the last request before the idle audit: seconds, or a duration such as 500ms (default: ${DEFAULT-VALUE}).")
    private double idleSeconds;

    @Option(names = "--processes",
            description = "Run every producer stage and the decoder in a JVM of its own, talking over loopback side channels (needs a cross-process transport such as ucx).")
    private boolean processes;

    @Option(names = "--hosts",
            description = "Run every producer stage, the decoder and etcd on a host of its own: Linux network namespaces joined by a switch (needs root and "
                    + "etcd); implies --processes and --backend tcp unless chosen, and the decoder finds the producer through etcd only. --backend ucx runs "
                    + "UCX over TCP (UCX_TLS=tcp) between them and needs --allow-unchecked-tcp-lane.")
    private boolean hosts;

    @Option(names = "--allow-unchecked-tcp-lane",
            description = "With --backend ucx or nixl: let UCX open its tcp transport, whose wire protocol writes wherever a put request names before "
                    + "any grant is checked (the engines get allow-unchecked-tcp-lane=true, named in the audit); --hosts --backend ucx and --backend nixl "
                    + "(unless UCX_TLS leaves tcp out) need it.")
    private boolean allowUncheckedTcpLane;

    @Option(names = "--device", paramLabel = "N",
            description = "Device of both engines' caches, for a transport that allocates device memory (cuda-ipc); its caches are always in device memory "
                    + "(default: 0). Other transports keep them in host memory.")
    private Integer device;

    @Option(names = "--lease-seconds", paramLabel = "SECONDS", defaultValue = "30", converter = ParsedTextConverter.SecondsConverter.class,
            description = "How long the producer holds finished blocks without news from the decoder: seconds, or a duration such as 5s "
                    + "(default: ${DEFAULT-VALUE}).")
    private double leaseSeconds;

    @Option(names = "--discovery", paramLabel = "etcd://HOST:PORT[,HOST:PORT...]",
            description = "Publish every producer rank in this etcd and have the decoder find the producer through it (needs a running etcd).")
    private String discovery;

    @Option(names = "--json", description = "Print the audit as one JSON object.")
    private boolean json;

    @Option(names = "--integrity", paramLabel = "off|crc32c", defaultValue = "off",
            description = "Block digests of both engines: crc32c makes the producer digest every block and the decoder check them before a request "
                    + "counts as received; one-rank engines of one cache shape, host caches (default: ${DEFAULT-VALUE}).")
    private String integrity;

    @Option(names = "--fault", paramLabel = "corrupt:N|stall-producer:DURATION",
            description = "Inject a fault: corrupt:N changes one byte of every N-th request in the producer's memory after prefillFinished; with "
                    + "--integrity crc32c the demo passes only if exactly those requests fail with KVB/DigestMismatch, without it the parity check "
                    + "counts the byte. stall-producer:DURATION (with --processes) stops the last producer stage's process for DURATION in the "
                    + "middle request, which runs alone; the decoder gives up after half of it, reuses the blocks once they are proven safe "
                    + "(a sentinel the resumed producer must not change) and the other requests complete.")
    private String fault;

    @Option(names = "--metrics-port", paramLabel = "PORT",
            description = "Serve both engines' meters in Prometheus text format at http://127.0.0.1:PORT/metrics while the demo runs (0: any free port).")
    private Integer metricsPort;

    @Mixin
    private JlamaDemo jlama;

    @Option(names = DemoTransferConfig.OPTION, paramLabel = "JSON|@FILE|FILE",
            description = "A configuration document, as vLLM's --kv-transfer-config and kvbridge config validate take it (else "
                    + "KVBRIDGE_KV_TRANSFER_CONFIG): its transport, transports options, kv_lease_duration, integrity and discovery apply to both "
                    + "engines; a key the demo sets itself, or one that differs from an option given, is refused.")
    private String kvTransferConfig;

    /** The document's options of the demo's transport, on top of the demo's own. */
    private Map<String, String> documentTransportOptions = Map.of();
    private boolean transportFromDocument;

    @Override
    public Integer call()
    {
        if (jlama.selected(spec)) {
            check(kvTransferConfig == null, "%s applies to the demo's own engines; --engine jlama configures its JVMs itself", DemoTransferConfig.OPTION);
            return jlama.run(spec, backend, mode.toString(), seed, json, concurrency);
        }
        DemoOptions options = validate();
        PrintWriter out = spec.commandLine().getOut();
        // on stderr, so that `demo > file` and --json keep only the audit
        Progress progress = new Progress(spec.commandLine().getErr(), ((KvBridgeCli) spec.root().userObject()).errIsTerminal(), requests, "requests",
                System::nanoTime);
        MetricsEndpoint metrics = metricsPort == null ? null : MetricsEndpoint.start(metricsPort, 2);
        if (metrics != null) {
            // on stderr, so that --json output stays one object
            spec.commandLine().getErr().printf(Locale.ROOT, "metrics: http://127.0.0.1:%d/metrics%n", metrics.port());
            spec.commandLine().getErr().flush();
        }
        Map<String, Object> audit;
        try {
            audit = run(options, progress, metrics);
        }
        catch (DemoFailure e) {
            spec.commandLine().getErr().println(ErrorLines.prefix(spec.commandLine()) + "failed: " + ErrorLines.oneLine(e.getMessage()));
            spec.commandLine().getErr().flush();
            return 1;
        }
        finally {
            if (metrics != null) {
                metrics.close();
            }
        }
        if (json) {
            out.println(Json.write(audit));
        }
        else {
            DemoAuditText.print(out, audit);
        }
        out.flush();
        return Boolean.TRUE.equals(audit.get("ok")) ? 0 : 1;
    }

    private static Map<String, Object> run(DemoOptions options, Progress progress, MetricsEndpoint metrics)
    {
        if (metrics == null) {
            return new DemoRun(options, progress).run();
        }
        // the bridges are built with the endpoint's registries, and it answers once both exist
        return new DemoRun(options, progress, metrics::registry, (producer, decoder) -> {
            metrics.built();
            metrics.built();
        }).run();
    }

    /** Applies a configuration document's settings to the demo's options, refusing one that an option given sets differently. */
    private void applyTransferConfig()
    {
        DemoTransferConfig config = DemoTransferConfig.read(spec, kvTransferConfig, System.getenv()).orElse(null);
        if (config == null) {
            return;
        }
        if (config.transport() != null) {
            backend = agreed(config, "transport", config.transport(), "--backend", backend);
            transportFromDocument = true;
        }
        if (config.leaseSeconds() != null) {
            leaseSeconds = agreed(config, "kv_lease_duration", config.leaseSeconds(), "--lease-seconds", leaseSeconds);
        }
        if (config.integrity() != null) {
            integrity = agreed(config, "integrity", config.integrity().configName(), "--integrity", integrity);
        }
        if (config.discovery() != null) {
            discovery = agreed(config, "discovery", config.discovery(), "--discovery", discovery);
        }
        for (String named : config.transportOptions().keySet()) {
            check(named.equals(backend), "%s sets options of transport %s, but the demo runs %s; name that transport or give --backend %s", config.source(),
                    named, backend, named);
        }
        documentTransportOptions = config.transportOptions().getOrDefault(backend, Map.of());
    }

    /** {@return the document's value, refused when an option given says otherwise} */
    private <T> T agreed(DemoTransferConfig config, String key, T documentValue, String option, T optionValue)
    {
        boolean given = spec.commandLine().getParseResult().hasMatchedOption(option);
        check(!given || documentValue.equals(optionValue), "%s sets %s=%s but %s=%s; give it once", config.source(), key, documentValue, option,
                optionValue);
        return documentValue;
    }

    private DemoOptions validate()
    {
        applyTransferConfig();
        check(requests >= 1 && requests <= 1_000_000, "--requests=%d is outside [1, 1000000]", requests);
        check(concurrency >= 1 && concurrency <= 64, "--concurrency=%d is outside [1, 64]", concurrency);
        check(maxTokens >= 1 && maxTokens <= 65_536, "--max-tokens=%d is outside [1, 65536]", maxTokens);
        check(idleSeconds >= 0 && idleSeconds <= 60, "--idle-seconds=%s is outside [0, 60]", idleSeconds);
        check(metricsPort == null || (metricsPort >= 0 && metricsPort <= 65_535), "--metrics-port=%s is outside [0, 65535] (0 picks a free port)", metricsPort);
        check(DemoModel.MODELS.contains(model), "--model=%s is not one of %s", model, String.join(", ", DemoModel.MODELS));
        boolean hybrid = model.equals(DemoModel.HYBRID_SSM);
        check(!hybrid || layout != Layout.MLA, "--model hybrid-ssm has attention and Mamba layers, no MLA latent; use --layout hma or per-layer");
        int layers = DemoModel.layerCount(model);
        for (String[] pp : new String[][] {{"--producer-pp", Integer.toString(producerPp)}, {"--consumer-pp", Integer.toString(consumerPp)}}) {
            int value = Integer.parseInt(pp[1]);
            check(value >= 1 && value <= layers, "%s=%d is outside [1, %d] (the model has %d layers)", pp[0], value, layers, layers);
        }
        if (layout == Layout.MLA) {
            check(producerTp >= 1 && producerTp <= 8 && consumerTp >= 1 && consumerTp <= 8, "--producer-tp=%d and --consumer-tp=%d must be in [1, 8]",
                    producerTp, consumerTp);
            // the latent is replicated, so any sizes pair in both modes as long as one divides the other
            check(Math.max(producerTp, consumerTp) % Math.min(producerTp, consumerTp) == 0,
                    "--producer-tp=%d and --consumer-tp=%d must be multiples of one another (for example %d and %d)", producerTp, consumerTp,
                    Math.min(producerTp, consumerTp), 2 * Math.min(producerTp, consumerTp));
        }
        else {
            check(List.of(1, 2, 4).contains(producerTp) && List.of(1, 2, 4).contains(consumerTp),
                    "--producer-tp=%d and --consumer-tp=%d must each be 1, 2 or 4 (they split the model's %d KV heads)", producerTp, consumerTp,
                    DemoModel.KV_HEADS);
        }
        check(leaseSeconds >= 0.1 && leaseSeconds <= 3600, "--lease-seconds=%s is outside [0.1, 3600]", leaseSeconds);
        // every rank of one engine handshakes with the other's side channel at once: more than it serves at a time are refused after the start
        int connections = SideChannelDefaults.maxConnections();
        check((long) producerPp * producerTp <= connections && (long) consumerPp * consumerTp <= connections,
                "--producer-pp x --producer-tp = %d and --consumer-pp x --consumer-tp = %d ranks must each be at most %d, the handshakes a side channel "
                        + "serves at once; use fewer stages or ranks", producerPp * producerTp, consumerPp * consumerTp, connections);
        // and each decoder rank fetches every producer rank's metadata within the handshake deadline
        check(producerPp * producerTp * consumerPp * consumerTp <= MAX_RANK_PAIRS,
                "%d producer ranks times %d decoder ranks is more than %d rank pairs, whose handshakes must finish within the side channel's deadline; "
                        + "use fewer stages or ranks", producerPp * producerTp, consumerPp * consumerTp, MAX_RANK_PAIRS);
        if (hosts) {
            check(discovery == null, "--discovery cannot be combined with --hosts: the hosts run an etcd of their own");
            processes = true;
            if (!spec.commandLine().getParseResult().hasMatchedOption("--backend") && !transportFromDocument) {
                // kvbridge's own frames, every access checked against a grant: UCX between hosts would be its tcp lane
                backend = "tcp";
            }
            check(!backend.equals("ucx") || allowUncheckedTcpLane, "--hosts --backend ucx runs UCX's tcp transport between the hosts, whose wire protocol "
                    + "writes wherever a put request names before any grant is checked; use --backend tcp (the default with --hosts), or add "
                    + "--allow-unchecked-tcp-lane where only the demo's hosts reach those ports");
        }
        check(!allowUncheckedTcpLane || backend.equals("ucx") || backend.equals("nixl"),
                "--allow-unchecked-tcp-lane is an option of --backend ucx and nixl, not of '%s'", backend);
        Map<String, String> transportOptions = new java.util.LinkedHashMap<>(documentTransportOptions);
        if (allowUncheckedTcpLane) {
            transportOptions.put("allow-unchecked-tcp-lane", "true");
        }
        check(metricsPort == null || !processes, "--metrics-port cannot be combined with --processes%s: the meters live in the engine processes",
                hosts ? " (implied by --hosts)" : "");
        String location = "";
        if (discovery != null) {
            DirectoryConfig directory = null;
            try {
                directory = DirectoryConfig.parse(discovery);
            }
            catch (KvBridgeException e) {
                check(false, "--%s", e.getMessage().substring(e.getMessage().indexOf("discovery=")));
            }
            location = directory.location();
            // as --hosts does: one line up front, rather than every handshake's warnings and a failure later
            String unreachable = unreachable(directory.endpoints());
            check(unreachable == null, "--discovery=%s cannot be reached (%s); start etcd there, or leave --discovery out", discovery, unreachable);
        }
        int cacheDevice = cacheDevice(checkBackend());
        DemoOptions.CacheShape[] shapes = cacheShapes.shapes(hybrid, layout);
        Integrity digests = integrity(shapes, cacheDevice);
        int corruptEvery = corruptEvery(cacheDevice);
        DemoOptions options = new DemoOptions(backend, mode.toString(), layout.toString(), producerPp, producerTp, consumerPp, consumerTp, requests,
                concurrency, maxTokens, seed, (long) (idleSeconds * 1000), processes, (long) (leaseSeconds * 1000), shapes[0], shapes[1], cacheDevice,
                location, hosts, transportOptions, digests, corruptEvery, model).withStallProducer(stallProducerMillis());
        options = streaming.apply(options, fault);
        if (hosts) {
            // last, since it makes and removes a namespace: every cheaper refusal comes first
            DemoHosts.unavailability().ifPresent(reason -> check(false, "--hosts cannot run here: %s", reason));
        }
        long cacheBytes = cacheBytes(options);
        check(cacheBytes <= MAX_CACHE_BYTES, "the caches would take %,d bytes (more than %s) with --concurrency=%d --max-tokens=%d; lower either",
                cacheBytes, Sizes.format(MAX_CACHE_BYTES), concurrency, maxTokens);
        return options;
    }

    /** --integrity: digests compare one producer rank's blocks with one decoder rank's of the same shape, in host memory. */
    private Integrity integrity(DemoOptions.CacheShape[] shapes, int cacheDevice)
    {
        check(integrity.equals("off") || integrity.equals("crc32c"), "--integrity=%s is not off or crc32c", integrity);
        if (integrity.equals("off")) {
            return Integrity.OFF;
        }
        check(producerPp == 1 && producerTp == 1 && consumerPp == 1 && consumerTp == 1, "--integrity crc32c compares one producer rank's blocks with one "
                + "decoder rank's; add --producer-pp 1 --producer-tp 1 --consumer-pp 1 --consumer-tp 1");
        check(shapes[0].equals(shapes[1]), "--integrity crc32c compares blocks of one cache shape; give both engines the same --block-tokens, "
                + "--kernel-block-tokens, --kv-planes and --placement");
        check(cacheDevice == DemoOptions.HOST_CACHES, "--integrity crc32c reads host memory; drop --device");
        return Integrity.CRC32C;
    }

    /** --fault corrupt:N: every N-th request has a byte changed in the producer's host memory. */
    private int corruptEvery(int cacheDevice)
    {
        if (fault == null || fault.startsWith(StallFault.PREFIX)) {
            return 0;
        }
        check(fault.startsWith("corrupt:") && fault.substring("corrupt:".length()).matches("[1-9][0-9]{0,8}"),
                "--fault=%s is not corrupt:N with N a positive count (every N-th request has a byte changed), nor stall-producer:DURATION", fault);
        int every = Integer.parseInt(fault.substring("corrupt:".length()));
        check(every <= requests, "--fault=%s changes no request of --requests=%d; give N at most the request count", fault, requests);
        check(cacheDevice == DemoOptions.HOST_CACHES, "--fault corrupt changes a byte in host memory; drop --device");
        return every;
    }

    /** --fault stall-producer:DURATION: the last producer stage's process stops in the middle request. */
    private long stallProducerMillis()
    {
        if (fault == null || !fault.startsWith(StallFault.PREFIX)) {
            return 0;
        }
        try {
            return StallFault.millis(fault, processes, requests, (long) (leaseSeconds * 1000));
        }
        catch (IllegalArgumentException e) {
            check(false, "%s", e.getMessage());
            return 0;
        }
    }

    /**
     * An upper bound of what both engines' caches take: every layer of every in-flight request, in each
     * engine's own block size, on every rank that holds it (MLA's latent is replicated on each TP rank).
     */
    static long cacheBytes(DemoOptions options)
    {
        DemoModel model = options.demoModel();
        long bytes = 0;
        for (boolean prefill : new boolean[] {true, false}) {
            DemoOptions.CacheShape shape = options.cache(prefill);
            int tp = prefill ? options.producerTp() : options.consumerTp();
            bytes += model.cacheBytes(DemoRun.capacity(options, shape), DemoRun.stateCapacity(options), tp, shape.blockTokens());
        }
        return bytes;
    }

    /**
     * Where the caches go: in device memory when the named transport allocates device memory itself
     * (cuda-ipc), else in host memory.
     */
    private int cacheDevice(Availability availability)
    {
        boolean deviceMemory = availability.capabilities().containsAll(List.of(Capability.DEVICE_MEMORY, Capability.TRANSPORT_ALLOCATION));
        if (!deviceMemory) {
            check(device == null, "--device=%d needs a transport that allocates device memory (cuda-ipc); '%s' keeps the caches in host memory", device,
                    backend);
            return DemoOptions.HOST_CACHES;
        }
        int chosen = device == null ? 0 : device;
        String devices = availability.details().get("devices");
        int count = devices == null ? Integer.MAX_VALUE : Integer.parseInt(devices);
        check(chosen >= 0 && chosen < count, "--device=%d is not a device '%s' sees (it sees %s: 0 to %d)", chosen, backend, devices, count - 1);
        return chosen;
    }

    /** {@return why none of the endpoints accepts a connection within a second, or null when one does} */
    static String unreachable(List<InetSocketAddress> endpoints)
    {
        List<String> reasons = new ArrayList<>();
        for (InetSocketAddress endpoint : endpoints) {
            String name = endpoint.getHostString() + ":" + endpoint.getPort();
            // the location's endpoints are kept unresolved; a connect needs the address
            InetSocketAddress resolved = new InetSocketAddress(endpoint.getHostString(), endpoint.getPort());
            if (resolved.isUnresolved()) {
                reasons.add(name + ": unknown host");
                continue;
            }
            try (Socket socket = new Socket()) {
                socket.connect(resolved, DISCOVERY_PROBE_MILLIS);
                return null;
            }
            catch (IOException e) {
                reasons.add(name + ": " + e.getMessage());
            }
        }
        return String.join("; ", reasons);
    }

    /**
     * Refuses a transport that was not discovered, cannot run here or, with --processes, cannot reach
     * another process, before anything starts.
     *
     * @return the transport's availability.
     */
    private Availability checkBackend()
    {
        // only the named transport is probed: another one's probe could load a native library this run must not have
        Map<String, DiscoveredTransport> transports = PluginRegistry.discover(DemoCommand.class.getClassLoader()).transports();
        DiscoveredTransport transport = transports.get(backend);
        check(transport != null, "--backend=%s is not a discovered transport; use one of %s", backend, String.join(", ", transports.keySet()));
        Availability availability = transport.availability();
        check(!processes || availability.capabilities().contains(Capability.CROSS_PROCESS) || !availability.available(),
                "%s needs a transport that reaches other processes, and '%s' cannot (its capabilities: %s); use --backend ucx", hosts ? "--hosts" : "--processes",
                backend,
                availability.capabilities().stream().map(Enum::name).sorted().toList());
        check(availability.available(), "--backend=%s is not available here: %s", backend, String.join("; ", availability.reasons()));
        return availability;
    }

    private void check(boolean condition, String format, Object... args)
    {
        InputChecks.check(spec, condition, format, args);
    }
}
