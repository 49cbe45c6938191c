package io.kvbridge.backend.nixl;

import io.kvbridge.backend.nixl.ffm.Nixl;
import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.transport.AbstractTransferBackendFactory;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Factory of the {@code nixl} transport: NIXL (its C API, {@code libnixl_capi.so}) bound through
 * FFM. Available only where that library is found and usable; it never pretends otherwise.
 *
 * <p>Options: {@code library} (the library file or its directory; default: the
 * {@value #LIBRARY_PROPERTY} system property, else a search of the usual places),
 * {@code allow-fake} (accept kvbridge's test fake; default: the {@value #ALLOW_FAKE_PROPERTY}
 * property, else false), {@code max-in-flight} (posted, unreleased transfers, 1..1048576, default
 * 16384), {@code progress-thread} (NIXL runs its own progress thread, default true),
 * {@code progress-delay-us} (the longest that thread waits for a UCX event before it polls again,
 * 0..1000000, default 100; NIXL's 0 keeps one core busy per agent), {@code telemetry} (NIXL
 * records per-request telemetry, and the transport checks each finished transfer's merged descriptor
 * count against the one it reported, default false), {@code close-timeout-ms} (how long
 * {@code close()} waits for NIXL's own shutdown before it gives the instance up with
 * {@code DEADLINE_EXCEEDED}, 100..600000, default 30000), {@code allow-unchecked-tcp-lane} (default
 * false: an instance whose UCX may open its tcp transport, which writes wherever a put request names
 * for anyone reaching its port, is refused with {@code CONFIG_INVALID} unless this is true or
 * {@code UCX_TLS} leaves tcp out; the same option as the {@code ucx} transport's).
 * {@code -D}{@value #ENABLED_PROPERTY}{@code =false} switches the transport off: the probe then
 * reports it unavailable without locating or loading anything ({@link NixlAvailability}).
 */
public final class NixlBackendFactory extends AbstractTransferBackendFactory
{
    private static final Logger LOG = LoggerFactory.getLogger(NixlBackendFactory.class);
    private static final AtomicBoolean UCX_WARNED = new AtomicBoolean();

    /** The transport's name. */
    public static final String NAME = "nixl";
    /** System property naming {@code libnixl_capi.so} or its directory. */
    public static final String LIBRARY_PROPERTY = "kvbridge.nixl.library";
    /** System property that switches the transport off ({@code false}) before anything loads. */
    public static final String ENABLED_PROPERTY = "kvbridge.nixl.enabled";
    /** System property that lets the transport run on kvbridge's test fake of NIXL. */
    public static final String ALLOW_FAKE_PROPERTY = "kvbridge.nixl.allow-fake";

    private final String library;
    private final Boolean allowFake;

    /** Creates the factory; it reads its system properties when it probes. */
    public NixlBackendFactory()
    {
        this(null, null);
    }

    /**
     * Creates a factory bound to a library, for tests and embedding.
     *
     * @param library the library file or its directory, or null to read the property and search.
     * @param allowFake whether the test fake is acceptable, or null to read the property.
     */
    NixlBackendFactory(String library, Boolean allowFake)
    {
        super(NAME, 0);
        this.library = library;
        this.allowFake = allowFake;
    }

    @Override
    public Availability probe()
    {
        try {
            return NixlProbe.run(configuredLibrary(), allowFake()).availability();
        }
        catch (RuntimeException | LinkageError e) {
            return Availability.unavailable(List.of("probing NIXL failed: " + e), Map.of());
        }
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        PluginConfig options = new PluginConfig(NAME, config);
        String chosenLibrary = options.stringValue("library", configuredLibrary());
        boolean chosenAllowFake = options.booleanValue("allow-fake", allowFake());
        int maxInFlight = options.intValue("max-in-flight", 16384, 1, 1 << 20);
        boolean progressThread = options.booleanValue("progress-thread", true);
        boolean telemetry = options.booleanValue("telemetry", false);
        long progressDelayMicros = options.intValue("progress-delay-us", (int) Nixl.DEFAULT_PROGRESS_DELAY_MICROS, 0, 1_000_000);
        long closeTimeoutMillis = options.intValue("close-timeout-ms", (int) NixlShutdown.CLOSE_TIMEOUT_MILLIS, 100, 600_000);
        boolean tcpLane = options.booleanValue(NixlUcxSettings.ALLOW_UNCHECKED_TCP_LANE, false);
        String tcpRefusal = NixlUcxSettings.tcpLaneRefusal(tcpLane, System.getenv(NixlUcxSettings.TLS_ENVIRONMENT));
        if (tcpRefusal != null) {
            options.problem(tcpRefusal);
        }
        options.finish();
        NixlProbe.Result probe = NixlProbe.run(chosenLibrary, chosenAllowFake);
        requireAvailable(probe.availability());
        String netDevices = System.getenv(NixlUcxSettings.NET_DEVICES_ENVIRONMENT);
        String ucxConfig = NixlUcxSettings.of(context.sideChannelHost(), netDevices);
        if (probe.realNixl() && ucxConfig.isEmpty() && !NixlUcxSettings.devicesChosen(netDevices) && UCX_WARNED.compareAndSet(false, true)) {
            // once per process: an engine opens one instance per rank and layer group, all alike
            LOG.warn("nixl instance {}: NIXL's UCX listens on every network device (said once per process), and UCX's tcp transport "
                    + "behind those sockets writes wherever a put request says, for anyone who reaches them; keep this host on a network "
                    + "only serving hosts reach, bind the side channel to loopback where every peer is on this host, or set "
                    + "UCX_NET_DEVICES", context.agentName());
        }
        return new NixlTransferBackend(probe.library().orElseThrow(), context.agentName(), progressThread, telemetry, maxInFlight, progressDelayMicros,
                ucxConfig, closeTimeoutMillis);
    }

    private String configuredLibrary()
    {
        return library != null ? library : NixlAvailability.configuredLibrary();
    }

    private boolean allowFake()
    {
        return allowFake != null ? allowFake : NixlAvailability.allowFake();
    }
}
