package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import com.google.inject.Inject;
import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.Health;
import io.kvbridge.core.discovery.Discovery;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelServer;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.TransferBackend;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the connectors of one bridge share: the transport factory each rank creates its own
 * transport instance from, the clock, the side channel client and servers (one server per engine,
 * serving every rank of it in this process), the handshake executor, and the metrics. The injector
 * builds one per bridge; {@link ConnectorFactory} starts the connectors over it. Closing it closes
 * every connector still open and the summary scheduler, never the meter registry.
 */
public final class EngineServices implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(EngineServices.class);

    private final RankTransports transports;
    private final Discovery discovery;
    private final SideChannelClock clock;
    private final SideChannelSettings sideChannelSettings;
    private final SideChannelClient client;
    private final ExecutorService handshakes = Executors.newVirtualThreadPerTaskExecutor();
    private final ScheduledExecutorService summaries;
    private final MeterRegistry registry;
    private final TransferMetrics metrics;
    private final Map<String, SharedServer> servers = new HashMap<>();
    // the gauges this bridge registered, taken out of the registry when it closes
    private final List<Gauge> gauges = new ArrayList<>();
    private final List<OpenRank> workers = new ArrayList<>();

    private static final class SharedServer
    {
        final SideChannelServer server;
        final String bindHost;
        final int port;
        // this incarnation of the engine's ranks here: drawn with the server, so a restart draws anew
        final long epoch = RankMetadata.newEpoch();
        // the keys this incarnation's producer ranks grant pulls under, shared by its ranks
        final PullKeys pullKeys;
        int users;

        SharedServer(SideChannelServer server, String bindHost, int port, SideChannelClock clock)
        {
            this.pullKeys = new PullKeys(clock::monotonicNanos);
            this.server = server;
            this.bindHost = bindHost;
            this.port = port;
        }
    }

    /**
     * Creates the services.
     *
     * @param transports creates each connector's transport instance from the bridge's selected transport.
     * @param clock the monotonic clock of leases, deadlines and heartbeats, and the wall clock of side channel authentication.
     * @param sideChannelSettings timeouts, limits and secret of the side channels (bind address and port come from each connector).
     * @param registry where the metrics are registered, from the first meter on; not closed here.
     * @param summaries when the one-line transfer summary is logged; its scheduler is shut down on close.
     */
    public EngineServices(RankTransports transports, SideChannelClock clock, SideChannelSettings sideChannelSettings, MeterRegistry registry,
            SummarySchedule summaries)
    {
        this(transports, clock, sideChannelSettings, registry, summaries, Discovery.NONE);
    }

    /**
     * Creates the services with a discovery directory, which they close.
     *
     * @param transports creates each connector's transport instance from the bridge's selected transport.
     * @param clock the monotonic clock of leases, deadlines and heartbeats, and the wall clock of side channel authentication.
     * @param sideChannelSettings timeouts, limits and secret of the side channels (bind address and port come from each connector).
     * @param registry where the metrics are registered, from the first meter on; not closed here.
     * @param summaries when the one-line transfer summary is logged; its scheduler is shut down on close.
     * @param discovery where every rank publishes its entry and handshakes locate producers; {@link Discovery#NONE} for none.
     */
    @Inject
    public EngineServices(RankTransports transports, SideChannelClock clock, SideChannelSettings sideChannelSettings, MeterRegistry registry,
            SummarySchedule summaries, Discovery discovery)
    {
        this.discovery = requireNonNull(discovery, "discovery is null");
        this.transports = requireNonNull(transports, "transports is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.sideChannelSettings = requireNonNull(sideChannelSettings, "sideChannelSettings is null");
        this.client = new SideChannelClient(sideChannelSettings, clock);
        this.registry = requireNonNull(registry, "registry is null");
        this.metrics = new TransferMetrics(registry);
        gauge("kvbridge.transfers.in.flight", "transfers posted and not yet finished, over the open connectors", ConnectorAudit::inFlightTransfers);
        gauge("kvbridge.leases.held", "requests whose blocks a producer holds under a lease", ConnectorAudit::leasesHeld);
        gauge("kvbridge.peers", "remote ranks the connectors' transports are connected to", audit -> audit.transport().peers());
        gauge("kvbridge.registrations", "memory registrations the connectors' transports hold", audit -> audit.transport().registrations());
        requireNonNull(summaries, "summaries is null");
        this.summaries = summaries.scheduler();
        if (summaries.enabled()) {
            long nanos = summaries.interval().toNanos();
            this.summaries.scheduleAtFixedRate(this::logSummary, nanos, nanos, TimeUnit.NANOSECONDS);
        }
    }

    /**
     * Registers a gauge over the open connectors' audit, read at each scrape. A registry shared by
     * several bridges keeps the first bridge's gauge (Micrometer allows one per name); it leaves
     * with that bridge, so that a later bridge registers its own.
     */
    private void gauge(String name, String description, ToIntFunction<ConnectorAudit> value)
    {
        boolean first = registry.find(name).gauge() == null;
        Gauge gauge = Gauge.builder(name, this, services -> value.applyAsInt(services.audit())).description(description).register(registry);
        if (first) {
            gauges.add(gauge);
        }
    }

    private void logSummary()
    {
        String line = metrics.drainSummary();
        if (line != null) {
            LOG.info(line);
        }
    }

    SideChannelClock clock()
    {
        return clock;
    }

    SideChannelSettings sideChannelSettings()
    {
        return sideChannelSettings;
    }

    /** {@return the bridge's discovery; {@link Discovery#NONE} without a directory} */
    public Discovery discovery()
    {
        return discovery;
    }

    SideChannelClient client()
    {
        return client;
    }

    ExecutorService handshakes()
    {
        return handshakes;
    }

    TransferMetrics metrics()
    {
        return metrics;
    }

    /** {@return the registry holding the transfer metrics} */
    public MeterRegistry registry()
    {
        return registry;
    }

    TransferBackend newTransport(String role, ConnectorSettings settings)
    {
        return transports.create(role, settings);
    }

    /** Returns the engine's side channel, starting it for the engine's first connector. */
    synchronized SideChannelServer acquireServer(ConnectorSettings settings)
    {
        SharedServer shared = servers.get(settings.engineId());
        if (shared == null) {
            InetAddress bind;
            try {
                bind = InetAddress.getByName(settings.bindHost());
            }
            catch (UnknownHostException e) {
                throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "bindHost=" + settings.bindHost() + " cannot be resolved: " + e.getMessage(), e);
            }
            SideChannelSettings engineSettings = sideChannelSettings.toBuilder().bindAddress(bind).port(settings.port()).build();
            refuseUnauthenticated(settings.engineId(), settings.bindHost(), engineSettings);
            shared = new SharedServer(SideChannelServer.startEmpty(settings.engineId(), engineSettings, clock), settings.bindHost(), settings.port(),
                    clock);
            servers.put(settings.engineId(), shared);
            LOG.info("engine {} serves its side channel on {} with epoch {}", settings.engineId(), shared.server.address(),
                    RankMetadata.formatEpoch(shared.epoch));
        }
        else if (!shared.bindHost.equals(settings.bindHost()) || (settings.port() != 0 && settings.port() != shared.port)) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "engine " + settings.engineId() + " already serves its side channel on "
                    + shared.bindHost + ":" + shared.port + " in this bridge, but a connector asks for " + settings.bindHost() + ":" + settings.port()
                    + " (expected: the same side channel for every rank of one engine)");
        }
        shared.users++;
        return shared.server;
    }

    /**
     * Refuses a side channel that other hosts reach but that proves nothing about its peers, unless
     * the configuration allows it by name: such a channel lets any process that reaches the port
     * read the engine's geometry, open notification sessions and free the requests it holds.
     */
    static void refuseUnauthenticated(String engineId, String bindHost, SideChannelSettings settings)
    {
        if (settings.authenticatesPeers() || settings.bindAddress().isLoopbackAddress() || settings.allowUnauthenticated()) {
            return;
        }
        throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "engine " + engineId + " would serve its side channel on " + bindHost
                + " (not loopback) without authenticating its peers, so any process that reaches it could read its cache geometry and free"
                + " its requests: configure a shared secret (secret_file, KVBRIDGE_SECRET_FILE, KvBridge.Builder.sideChannelSecret) or TLS"
                + " with client_auth=require, or run unauthenticated on purpose with side_channel_allow_unauthenticated=true"
                + " (KVBRIDGE_SIDE_CHANNEL_ALLOW_UNAUTHENTICATED, KvBridge.Builder.allowUnauthenticatedSideChannel)");
    }

    /**
     * Returns the epoch of the engine's side channel in this bridge: every rank it serves here
     * advertises it; it is drawn anew when the side channel starts again after its last rank closed.
     */
    synchronized long epoch(String engineId)
    {
        SharedServer shared = servers.get(engineId);
        KvBridgeException.check(shared != null, ErrorCode.CLOSED, "engine %s serves no side channel in this bridge", engineId);
        return shared.epoch;
    }

    /** Returns the pull keys of the engine's side channel in this bridge, which its ranks share; a restart starts an empty table. */
    synchronized PullKeys pullKeys(String engineId)
    {
        SharedServer shared = servers.get(engineId);
        KvBridgeException.check(shared != null, ErrorCode.CLOSED, "engine %s serves no side channel in this bridge", engineId);
        return shared.pullKeys;
    }

    synchronized void releaseServer(String engineId)
    {
        SharedServer shared = servers.get(engineId);
        if (shared != null && --shared.users == 0) {
            servers.remove(engineId);
            shared.server.close();
        }
    }

    synchronized void opened(OpenRank worker)
    {
        workers.add(worker);
    }

    synchronized void closed(OpenRank worker)
    {
        workers.remove(worker);
    }

    /**
     * Sums the audits of every open connector.
     *
     * @return the sum; all zeros when no connector is open.
     */
    public ConnectorAudit audit()
    {
        List<OpenRank> open;
        synchronized (this) {
            open = List.copyOf(workers);
        }
        int requests = 0;
        int transfers = 0;
        int leases = 0;
        int stashed = 0;
        int retained = 0;
        int registrations = 0;
        int lists = 0;
        int peers = 0;
        int handles = 0;
        int grants = 0;
        int quarantined = 0;
        for (OpenRank worker : open) {
            ConnectorAudit audit = worker.audit();
            requests += audit.requests();
            transfers += audit.inFlightTransfers();
            leases += audit.leasesHeld();
            stashed += audit.stashedRegistrations();
            retained += audit.retainedHandles();
            grants += audit.grants();
            quarantined += audit.quarantinedRequests();
            registrations += audit.transport().registrations();
            lists += audit.transport().preparedLists();
            peers += audit.transport().peers();
            handles += audit.transport().transfers();
        }
        return new ConnectorAudit(requests, transfers, leases, stashed, retained, grants, new BackendResources(registrations, lists, peers, handles),
                quarantined);
    }

    /**
     * Probes the bridge's transport, every open connector and every engine's side channel, as
     * {@code KvBridge.health()} describes. Workers are asked first, so that they answer while the
     * side channels are probed.
     *
     * @param bridgeTransport the bridge's own transport instance.
     * @param timeout how long each probe may wait for an answer; also how far past its deadline a
     *     transfer may be before it counts as not enforced.
     * @return the checks: {@code transport}, then the connectors by name, then the side channels by engine id, then
     *     {@code discovery} when a directory is configured.
     */
    public List<Health.Check> health(TransferBackend bridgeTransport, Duration timeout)
    {
        requireNonNull(bridgeTransport, "bridgeTransport is null");
        requireNonNull(timeout, "timeout is null");
        KvBridgeException.checkArgument(timeout.isPositive(), "health probe timeout=%s is not positive", timeout);
        List<OpenRank> open;
        Map<String, SharedServer> serving = new TreeMap<>();
        synchronized (this) {
            open = new ArrayList<>(workers);
            serving.putAll(servers);
        }
        open.sort(Comparator.comparing(OpenRank::name));
        long sent = System.nanoTime();
        long deadline = sent + timeout.toNanos();
        List<CompletableFuture<HealthReport>> answers = new ArrayList<>();
        for (OpenRank worker : open) {
            answers.add(worker.probe());
        }
        SideChannelClient prober = new SideChannelClient(sideChannelSettings.toBuilder().connectTimeout(timeout).readTimeout(timeout)
                .handshakeTimeout(timeout).build(), clock);
        List<Health.Check> sideChannels = new ArrayList<>();
        serving.forEach((engineId, shared) -> {
            Health.Check check = HealthProbes.sideChannel(engineId, shared.epoch, shared.server, prober);
            // a side channel stopped meanwhile by its engine's last connector is gone, not broken
            if (sideChannel(engineId) == shared.server) {
                sideChannels.add(check);
            }
        });
        List<Health.Check> checks = new ArrayList<>();
        checks.add(HealthProbes.transport("transport", bridgeTransport));
        for (int i = 0; i < open.size(); i++) {
            Health.Check check = HealthProbes.connector(open.get(i), answers.get(i), sent, deadline, timeout.toNanos());
            // a connector closed meanwhile is gone, not broken
            if (!open.get(i).isClosed()) {
                checks.add(check);
            }
        }
        checks.addAll(sideChannels);
        discovery.check().ifPresent(checks::add);
        return checks;
    }

    /** @return the side channel an engine's connectors serve on, or null when none of them is open. */
    synchronized SideChannelServer sideChannel(String engineId)
    {
        SharedServer shared = servers.get(engineId);
        return shared == null ? null : shared.server;
    }

    /** Logs the transfer summary of the interval now, as the periodic task does. */
    public void logSummaryNow()
    {
        logSummary();
    }

    @Override
    public void close()
    {
        List<OpenRank> open;
        synchronized (this) {
            open = List.copyOf(workers);
        }
        for (OpenRank worker : open) {
            worker.close();
        }
        summaries.shutdownNow();
        handshakes.shutdownNow();
        // after the connectors, which withdrew their entries; closing the directory revokes its lease
        discovery.close();
        gauges.forEach(registry::remove);
        logSummary();
    }
}
