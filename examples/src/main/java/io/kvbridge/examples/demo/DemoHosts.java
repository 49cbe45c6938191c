package io.kvbridge.examples.demo;

import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferParams;
import io.kvbridge.netlab.HostCommandException;
import io.kvbridge.netlab.HostEtcd;
import io.kvbridge.netlab.VirtualHosts;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;

/**
 * The hosts of {@code demo --hosts}: every producer stage, the decoder and etcd on a "host" of its
 * own, a network namespace joined to the others through a switch ({@link VirtualHosts}). Each
 * engine's worker JVM starts through {@code ip netns exec} and binds its side channels and transport
 * to its host's address; the producer's ranks publish themselves in the etcd, and the decoder finds
 * them there only: the parameters it is handed name no producer address ({@link #withoutAddresses}).
 * The fault tests run several decoders, each on a host and under an engine id of its own.
 */
public final class DemoHosts implements AutoCloseable
{
    /** The namespaces' prefix; leftovers of a killed demo carry it and are removed by the next. */
    static final String PREFIX = "kvbdemo";
    /** Each producer stage's side channel port: every host has a port space of its own. */
    static final int SIDE_CHANNEL_PORT = 5600;
    private static final long HEALTHY_NANOS = 30_000_000_000L;
    private static final String ETCD = "etcd";
    private static final String DECODE = "decode";
    /** The most decode hosts one set of hosts has. */
    static final int MAX_DECODERS = 8;

    private final VirtualHosts hosts;
    private final Path workDir;
    private final HostEtcd etcd;
    private final DemoOptions options;

    private DemoHosts(VirtualHosts hosts, Path workDir, HostEtcd etcd, DemoOptions options)
    {
        this.hosts = hosts;
        this.workDir = workDir;
        this.etcd = etcd;
        this.options = options;
    }

    /**
     * Why the hosts cannot be made here, or empty when they can: namespaces or etcd missing.
     *
     * @return the reason.
     */
    public static Optional<String> unavailability()
    {
        return HostEtcd.unavailability().or(VirtualHosts::unavailability);
    }

    /**
     * Makes the hosts, one of them for the decoder, and starts etcd on its own.
     *
     * @param options the demo's options; their discovery location is replaced by the hosts' etcd.
     * @return the hosts, with no engine started yet.
     * @throws DemoFailure when a host or etcd cannot be started.
     */
    static DemoHosts start(DemoOptions options)
    {
        return start(options, 1);
    }

    /**
     * Makes the hosts and starts etcd on its own.
     *
     * @param options the demo's options; their discovery location is replaced by the hosts' etcd.
     * @param decoders how many decode engines get a host of their own, each with an engine id of its
     *     own ({@link #decoderEngineId}), from 1 to {@value #MAX_DECODERS}.
     * @return the hosts, with no engine started yet.
     * @throws DemoFailure when a host or etcd cannot be started.
     */
    static DemoHosts start(DemoOptions options, int decoders)
    {
        if (decoders < 1 || decoders > MAX_DECODERS) {
            throw new IllegalArgumentException("decoders=" + decoders + " is not between 1 and " + MAX_DECODERS);
        }
        List<String> names = new ArrayList<>();
        names.add(ETCD);
        IntStream.range(0, options.producerPp()).forEach(stage -> names.add(prefillHost(stage)));
        IntStream.range(0, decoders).forEach(decoder -> names.add(decodeHost(decoder)));
        VirtualHosts hosts;
        try {
            hosts = VirtualHosts.create(PREFIX, names);
        }
        catch (HostCommandException e) {
            throw new DemoFailure("cannot make the hosts' network namespaces: " + e.getMessage());
        }
        Path workDir = null;
        try {
            workDir = Files.createTempDirectory("kvbridge-hosts-etcd");
            HostEtcd etcd = HostEtcd.start(hosts.host(ETCD), workDir);
            return new DemoHosts(hosts, workDir, etcd, options.withDiscovery(etcd.location()));
        }
        catch (IOException | HostCommandException e) {
            hosts.close();
            delete(workDir);
            throw new DemoFailure("cannot start etcd on its host: " + e.getMessage());
        }
    }

    private static String prefillHost(int stage)
    {
        return "prefill" + stage;
    }

    // the first is plain "decode", as with one decoder
    private static String decodeHost(int decoder)
    {
        return decoder == 0 ? DECODE : DECODE + (decoder + 1);
    }

    /**
     * @param decoder which decode engine, from 0.
     * @return its engine id: {@code demo-decode} for the first, as with one decoder, then
     *     {@code demo-decode2}, ...
     */
    static String decoderEngineId(int decoder)
    {
        return decoder == 0 ? HostSpec.defaultEngineId(HostSpec.DECODE) : "demo-" + decodeHost(decoder);
    }

    /** {@return the options every engine runs with: discovery through the hosts' etcd} */
    DemoOptions options()
    {
        return options;
    }

    /** {@return the hosts' namespaces and cables} */
    VirtualHosts network()
    {
        return hosts;
    }

    /** {@return the etcd} */
    HostEtcd etcd()
    {
        return etcd;
    }

    /** {@return the host of a producer stage} */
    VirtualHosts.Host prefill(int stage)
    {
        return hosts.host(prefillHost(stage));
    }

    /** {@return the (first) decoder's host} */
    VirtualHosts.Host decode()
    {
        return decode(0);
    }

    /**
     * @param decoder which decode engine, from 0.
     * @return its host.
     */
    VirtualHosts.Host decode(int decoder)
    {
        return hosts.host(decodeHost(decoder));
    }

    /** {@return the side channel of every producer stage, each on its own host} */
    List<SideChannelAddress> stageSideChannels()
    {
        return IntStream.range(0, options.producerPp()).mapToObj(stage -> new SideChannelAddress(prefill(stage).address(), SIDE_CHANNEL_PORT)).toList();
    }

    /**
     * Starts one producer stage's worker JVM on its host.
     *
     * @param stage the stage.
     * @param capacity blocks per region.
     * @param secret the run's side channel secret.
     * @return the host, not ready yet.
     */
    ProcessHost startProducer(int stage, int capacity, byte[] secret)
    {
        VirtualHosts.Host host = prefill(stage);
        return ProcessHost.start(new HostSpec(HostSpec.PREFILL, options, capacity, List.of(stage), stageSideChannels(), secret, host.address()),
                environment(), host.launcher());
    }

    /**
     * Starts the (first) decoder's worker JVM, every stage of it, on its host.
     *
     * @param capacity blocks per region.
     * @param secret the run's side channel secret.
     * @return the host, not ready yet.
     */
    ProcessHost startDecoder(int capacity, byte[] secret)
    {
        return startDecoder(0, capacity, secret);
    }

    /**
     * Starts a decoder's worker JVM, every stage of it, on its host, under its own engine id.
     *
     * @param decoder which decode engine, from 0; its host must have been made by {@link #start(DemoOptions, int)}.
     * @param capacity blocks per region.
     * @param secret the run's side channel secret.
     * @return the host, not ready yet.
     */
    ProcessHost startDecoder(int decoder, int capacity, byte[] secret)
    {
        VirtualHosts.Host host = decode(decoder);
        List<Integer> stages = IntStream.range(0, options.consumerPp()).boxed().toList();
        return ProcessHost.start(new HostSpec(HostSpec.DECODE, options, capacity, stages, List.of(), secret, host.address(), decoderEngineId(decoder)),
                environment(), host.launcher());
    }

    /**
     * Waits until every engine's health is clear, its discovery check included: a cold JVM's first
     * call to etcd may miss its deadline on a loaded machine, and until the directory's next probe
     * answers, a handshake would go to the address in the parameters, which leads nowhere here.
     *
     * @param engines the started and ready hosts.
     * @throws DemoFailure when one is still unhealthy after 30 s, naming its problems.
     */
    void awaitHealthy(List<? extends DemoHost> engines)
    {
        long deadline = System.nanoTime() + HEALTHY_NANOS;
        for (DemoHost engine : engines) {
            while (true) {
                @SuppressWarnings("unchecked")
                List<String> problems = (List<String>) engine.audit().get("health");
                if (problems.isEmpty()) {
                    break;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new DemoFailure("the " + engine.label() + " is not healthy " + HEALTHY_NANOS / 1_000_000_000L + " s after it started: "
                            + String.join("; ", problems));
                }
                try {
                    Thread.sleep(100);
                }
                catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new DemoFailure("interrupted while waiting for the " + engine.label() + " to reach etcd");
                }
            }
        }
    }

    /**
     * UCX over TCP between hosts (shared memory would cross the namespaces), unless the user chose its
     * transports; the ucx transport opens it only with {@code allow-unchecked-tcp-lane=true} in the
     * options, which the command asks the user for.
     */
    private Map<String, String> environment()
    {
        return options.backend().equals("ucx") && System.getenv("UCX_TLS") == null ? Map.of("UCX_TLS", "tcp") : Map.of();
    }

    /**
     * The parameters a router hands the decoder, without the producer's addresses: stage {@code s}'s
     * side channel is port {@code 1 + s} of the decoder's own loopback, where nothing listens, so
     * only etcd's entries lead to the producer.
     *
     * @param params what the producer's stages returned.
     * @return the same parameters, pointing nowhere.
     */
    static TransferParams withoutAddresses(TransferParams params)
    {
        return new TransferParams(params.engineId(), params.requestId(), IntStream.range(0, params.ppSize()).mapToObj(stage -> new SideChannelAddress("127.0.0.1", 1 + stage)).toList(), params.tpSize(), params.ppSize(),
                params.blockIds(), params.modes(), params.leaseMillis(), params.finishedNanos(), params.epochs(), params.pullKeys());
    }

    /** {@return each host's role and address, for the audit} */
    Map<String, String> describe()
    {
        Map<String, String> described = new LinkedHashMap<>();
        for (VirtualHosts.Host host : hosts.hosts()) {
            described.put(host.name(), host.name().equals(ETCD) ? host.address() + ":" + HostEtcd.CLIENT_PORT : host.address());
        }
        return described;
    }

    /** Stops etcd and removes the hosts; the engines' worker JVMs must be closed first. */
    @Override
    public void close()
    {
        try {
            etcd.close();
        }
        finally {
            hosts.close();
            delete(workDir);
        }
    }

    private static void delete(Path dir)
    {
        if (dir == null) {
            return;
        }
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + dir, e);
        }
    }
}
