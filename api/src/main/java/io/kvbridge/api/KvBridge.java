package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.transfer.TransferBackend;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * What an inference engine embeds: the discovered plugins, the selected transport instance and the
 * cache layouts. Built with {@link #builder()}; the implementation comes from {@code kvbridge-core}
 * on the class path. Thread-safe. Closing it closes the transport.
 */
public interface KvBridge extends AutoCloseable
{
    /** Transport name that selects the best available transport. */
    String AUTO = "auto";

    /**
     * Returns every discovered plugin, transports first, each kind sorted by name.
     *
     * @return the plugin list.
     */
    List<PluginInfo> plugins();

    /**
     * Returns the transport instance this bridge owns.
     *
     * @return the transport.
     */
    TransferBackend transport();

    /**
     * Creates a cache layout by name.
     *
     * @param name layout name, such as {@code per-layer}.
     * @param config layout options.
     * @return the layout.
     * @throws KvBridgeException {@code PLUGIN_UNKNOWN} listing the available layouts.
     */
    CacheLayout layout(String name, Map<String, String> config);

    /**
     * Starts the producer connector of one rank: registers the rank's caches with a transport instance
     * of its own and serves the rank's metadata on the engine's side channel (shared by every rank of
     * the engine created through this bridge).
     *
     * @param settings the rank's settings.
     * @return the running connector, closed by the caller (or by {@link #close()}).
     * @throws KvBridgeException {@code CONFIG_INVALID} (also when the configured role is
     *     {@code kv_consumer}), {@code ALREADY_REGISTERED},
     *     {@code MEMORY_KIND_UNSUPPORTED} or {@code UNSUPPORTED} (push over mixed host and device caches).
     */
    ProducerConnector producer(ConnectorSettings settings);

    /**
     * Starts the consumer connector of one rank, as {@link #producer} does for producers.
     *
     * @param settings the rank's settings.
     * @return the running connector, closed by the caller (or by {@link #close()}).
     * @throws KvBridgeException as {@link #producer} does; {@code CONFIG_INVALID} also when the
     *     configured role is {@code kv_producer}.
     */
    ConsumerConnector consumer(ConnectorSettings settings);

    /**
     * Starts a rank's connector settings from the bridge's configuration (see
     * {@link Builder#config(String)}): the engine id, side channel host and port, advertised host,
     * modes, lease, transfer and registration timeouts and failure policy it gives, the defaults for
     * the rest, and the configured layout when it is the one that described the geometry. The engine
     * may change any of them before {@code build()}.
     *
     * @param geometry the rank's cache.
     * @return the settings builder.
     * @throws KvBridgeException {@code CONFIG_INVALID} when no engine id is configured.
     */
    ConnectorSettings.Builder connectorSettings(CacheGeometry geometry);

    /**
     * Creates the cache layout the configuration names, with its configured options.
     *
     * @return the layout.
     * @throws KvBridgeException {@code CONFIG_INVALID} when the configuration names no layout;
     *     {@code PLUGIN_UNKNOWN} when no such layout is on the class path.
     */
    CacheLayout configuredLayout();

    /**
     * Sums the audits of every connector still open: an idle engine holds no request, transfer,
     * lease or stashed registration.
     *
     * @return the sum.
     */
    ConnectorAudit audit();

    /**
     * Probes whether the bridge can do its work now. Checks, in this order:
     * <ul>
     *   <li>{@code transport}: the bridge's transport reports no problem (see
     *       {@link TransferBackend#problem()});</li>
     *   <li>one per open connector, named like its worker ({@code producer prefill pp0/1:tp0/1}): its
     *       worker thread runs and answers a probe sent through its queue, its transport reports no
     *       problem, it retains no handle whose release failed, and no transfer is past its deadline
     *       without having been failed;</li>
     *   <li>{@code side channel <engine id>}: the engine's side channel answers a request for one of
     *       its ranks over TCP from this process.</li>
     * </ul>
     * Each probe waits at most one second. A failed probe is reported, never thrown. A closed bridge
     * is unhealthy, with the single check {@code bridge}. The metrics registry carries the same result
     * as the gauge {@code kvbridge.health} (1 healthy, 0 not), probed again at every read.
     *
     * @return the checks and whether all of them passed.
     */
    Health health();

    /**
     * Returns the metrics registry, so that an engine can scrape it or add its own registry to it.
     * When the engine passed one with {@link Builder#meterRegistry(Object)}, it is that registry;
     * otherwise the bridge records into a Micrometer {@code CompositeMeterRegistry} of its own (ask
     * for {@code io.micrometer.core.instrument.MeterRegistry} or {@code CompositeMeterRegistry}).
     * Meter names start with {@code kvbridge.} ({@code kvbridge_} in Prometheus).
     *
     * @param type the registry type wanted.
     * @param <T> that type.
     * @return the registry.
     * @throws KvBridgeException {@code UNSUPPORTED} when the registry is not of that type.
     */
    <T> T metricsRegistry(Class<T> type);

    /** Closes every connector, then the transport, and releases everything they hold. Idempotent. */
    @Override
    void close();

    /**
     * Starts a builder.
     *
     * @return a new builder.
     */
    static Builder builder()
    {
        return new Builder();
    }

    /** Collects the settings of a {@link KvBridge}. Not thread-safe. */
    final class Builder
    {
        /** The one type {@link #meterRegistry(Object)} accepts, with its subclasses. */
        private static final String MICROMETER_REGISTRY = "io.micrometer.core.instrument.MeterRegistry";

        private String transport = AUTO;
        private String agentName = "";
        private final Map<String, String> transportConfig = new LinkedHashMap<>();
        private byte[] sideChannelSecret = new byte[0];
        private TlsFiles sideChannelTls;
        private boolean allowUnauthenticatedSideChannel;
        private LongSupplier monotonicClock;
        private InstantSource wallClock;
        private Object meterRegistry;
        private String configText;
        private Path configFile;
        private Map<String, String> environment;
        private final Set<String> explicit = new HashSet<>();

        private Builder()
        {
        }

        /**
         * Selects the transport by name, or {@link #AUTO} for the best available one (the default).
         *
         * @param name transport name.
         * @return this builder.
         */
        public Builder transport(String name)
        {
            this.transport = requireNonNull(name, "name is null");
            explicit.add("transport");
            return this;
        }

        /**
         * Sets the agent name peers see; by default one is generated.
         *
         * @param name agent name.
         * @return this builder.
         */
        public Builder agentName(String name)
        {
            this.agentName = requireNonNull(name, "name is null");
            explicit.add("agentName");
            return this;
        }

        /**
         * Adds transport options; unknown keys fail at {@link #build()}.
         *
         * @param config options.
         * @return this builder.
         */
        public Builder transportConfig(Map<String, String> config)
        {
            transportConfig.putAll(requireNonNull(config, "config is null"));
            explicit.add("transportConfig");
            return this;
        }

        /**
         * Sets the shared secret that authenticates every side channel message (HMAC-SHA256 with
         * nonce and timestamp); every engine that talks to this one must use the same secret. Without
         * one (the default) the side channel accepts anything that reaches its port: an engine then
         * serves loopback only, unless {@link #allowUnauthenticatedSideChannel} or TLS with client
         * certificates says otherwise.
         *
         * @param secret at least 16 random bytes, or empty for none; copied.
         * @return this builder.
         */
        public Builder sideChannelSecret(byte[] secret)
        {
            this.sideChannelSecret = requireNonNull(secret, "secret is null").clone();
            explicit.add("sideChannelSecret");
            return this;
        }

        /**
         * Lets the engine serve its side channel on an address other hosts reach (not loopback)
         * without a {@link #sideChannelSecret secret} or {@link #sideChannelTls TLS} that requires
         * client certificates. By default such an engine refuses to start ({@code KVB/ConfigInvalid}),
         * because then any process that reaches the port can read its cache geometry and send
         * completions that free requests it holds; allow it only on a network where every such
         * process is trusted. Configuration key {@code side_channel_allow_unauthenticated}.
         *
         * @param allow whether to allow it.
         * @return this builder.
         */
        public Builder allowUnauthenticatedSideChannel(boolean allow)
        {
            this.allowUnauthenticatedSideChannel = allow;
            explicit.add("allowUnauthenticatedSideChannel");
            return this;
        }

        /**
         * Where the side channel's TLS material lives, as {@link #sideChannelTls} gives it.
         *
         * @param certFile PEM certificate chain of this engine, its own certificate first.
         * @param keyFile PEM PKCS#8 private key ({@code BEGIN PRIVATE KEY}) of that certificate; not
         *     readable by every user of the host.
         * @param caFile PEM bundle of the CA certificates peers' certificates must chain to.
         * @param requireClientCertificates whether the server refuses clients without a certificate
         *     the CA signed (mutual TLS).
         */
        public record TlsFiles(Path certFile, Path keyFile, Path caFile, boolean requireClientCertificates)
        {
            /** Checks that every file is given. */
            public TlsFiles
            {
                requireNonNull(certFile, "certFile is null");
                requireNonNull(keyFile, "keyFile is null");
                requireNonNull(caFile, "caFile is null");
            }
        }

        /**
         * Runs the side channel over TLS 1.3 with a certificate and key in PEM files, so that
         * geometry metadata and addresses are not readable on the wire and peers prove who they are;
         * a client checks that the server's certificate names the host it connects to. Overrides
         * the files of the configuration's {@code tls} object and its {@code client_auth}; keystores
         * are configured there. A shared secret, if set, still authenticates each message inside
         * TLS. Every engine that talks to this one must use TLS too. {@link #build()} refuses files
         * with any problem, naming them all.
         *
         * @param files the files, read by {@link #build()}.
         * @return this builder.
         */
        public Builder sideChannelTls(TlsFiles files)
        {
            this.sideChannelTls = requireNonNull(files, "files is null");
            explicit.add("sideChannelTls");
            return this;
        }

        /**
         * Sets the monotonic clock the connectors measure time with: leases, transfer and
         * registration deadlines, heartbeats, handshake round trips and how long a remote engine
         * has been idle. By default {@link System#nanoTime()}. An engine that drives its scheduler
         * from its own clock passes it here, so that a lease expires when that clock passes it; a
         * test can pass a clock it moves by hand.
         *
         * @param nanos returns nanoseconds from an arbitrary origin and never decreases; called from
         *     several threads.
         * @return this builder.
         */
        public Builder monotonicClock(LongSupplier nanos)
        {
            this.monotonicClock = requireNonNull(nanos, "nanos is null");
            return this;
        }

        /**
         * Sets the wall clock that stamps and checks authenticated side channel messages (see
         * {@link #sideChannelSecret}). Those timestamps are compared across hosts, so this clock must
         * agree with the other engines' to within the side channel's window. By default the system clock.
         *
         * @param clock the wall clock; called from several threads.
         * @return this builder.
         */
        public Builder wallClock(InstantSource clock)
        {
            this.wallClock = requireNonNull(clock, "clock is null");
            return this;
        }

        /**
         * Makes the bridge record its meters into the engine's own Micrometer registry, from the
         * first meter on, instead of a registry of its own. The bridge never closes it. Bridges
         * sharing a registry share the {@code kvbridge.*} meters, which then sum over them.
         *
         * <p>The accepted type is {@code io.micrometer.core.instrument.MeterRegistry} (any subclass:
         * {@code SimpleMeterRegistry}, {@code CompositeMeterRegistry}, {@code PrometheusMeterRegistry}),
         * from micrometer-core 1.x. The parameter is {@code Object} because this module depends on the
         * JDK only: a Micrometer parameter type would put micrometer-core on the class path of every
         * embedder, metrics or not. This method refuses an object of any other class at once; {@link
         * #build()} further refuses a registry whose Micrometer classes were loaded by a class loader
         * other than {@code kvbridge-core}'s (two copies of micrometer-core).
         *
         * <pre>{@code
         * MeterRegistry engineMeters = new SimpleMeterRegistry();
         * KvBridge bridge = KvBridge.builder().meterRegistry(engineMeters).build();
         * }</pre>
         *
         * @param registry an {@code io.micrometer.core.instrument.MeterRegistry}.
         * @return this builder.
         * @throws KvBridgeException {@code CONFIG_INVALID} naming the given class and the expected one
         *     when {@code registry} is not a Micrometer {@code MeterRegistry}.
         */
        public Builder meterRegistry(Object registry)
        {
            requireNonNull(registry, "registry is null");
            if (!extendsClassNamed(registry.getClass(), MICROMETER_REGISTRY)) {
                throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "meterRegistry is a " + registry.getClass().getName() + ", not a "
                        + MICROMETER_REGISTRY + "; pass a Micrometer registry (micrometer-core), or none for the bridge's own");
            }
            this.meterRegistry = registry;
            return this;
        }

        /** Checked by name: this module cannot see Micrometer, and kvbridge-core checks the class loader at build. */
        private static boolean extendsClassNamed(Class<?> type, String name)
        {
            for (Class<?> c = type; c != null; c = c.getSuperclass()) {
                if (c.getName().equals(name)) {
                    return true;
                }
            }
            return false;
        }

        /**
         * Configures the bridge from a JSON document, shaped like vLLM's {@code --kv-transfer-config}
         * (see the README's configuration section): role, engine id, transport and its options,
         * side channel, secret file, failure policy, lease, timeouts, modes and layout. The
         * environment's {@code KVBRIDGE_*} variables override it, and this builder's own calls
         * override both. Read by {@link #build()}, which refuses a document with any problem,
         * naming them all. Replaces a document given before.
         *
         * @param json the document.
         * @return this builder.
         */
        public Builder config(String json)
        {
            this.configText = requireNonNull(json, "json is null");
            this.configFile = null;
            return this;
        }

        /**
         * Configures the bridge from a JSON document in a file, as {@link #config(String)} does.
         * Without a document, {@link #build()} reads the file {@code KVBRIDGE_CONFIG_FILE} names, if any.
         *
         * @param file the document's file; read by {@link #build()}.
         * @return this builder.
         */
        public Builder config(Path file)
        {
            this.configFile = requireNonNull(file, "file is null");
            this.configText = null;
            return this;
        }

        /**
         * Sets the environment the {@code KVBRIDGE_*} variables are read from, in place of the
         * process's ({@link System#getenv()}): for a test, or an engine that keeps its settings elsewhere.
         *
         * @param variables the variables; copied.
         * @return this builder.
         */
        public Builder environment(Map<String, String> variables)
        {
            this.environment = Map.copyOf(requireNonNull(variables, "variables is null"));
            return this;
        }

        /**
         * Returns the document given as text.
         *
         * @return the document given with {@link #config(String)}, empty when none.
         */
        public Optional<String> configText()
        {
            return Optional.ofNullable(configText);
        }

        /**
         * Returns the document's file.
         *
         * @return the file given with {@link #config(Path)}, empty when none.
         */
        public Optional<Path> configFile()
        {
            return Optional.ofNullable(configFile);
        }

        /**
         * Returns the environment the {@code KVBRIDGE_*} variables are read from.
         *
         * @return the one given with {@link #environment(Map)}, else the process's.
         */
        public Map<String, String> environment()
        {
            return environment != null ? environment : System.getenv();
        }

        /**
         * Tells whether a setting was given by a call on this builder, which then overrides the
         * configuration document and the environment.
         *
         * @param setting {@code transport}, {@code agentName}, {@code transportConfig}, {@code sideChannelSecret},
         *     {@code sideChannelTls} or {@code allowUnauthenticatedSideChannel}.
         * @return whether its method was called.
         */
        public boolean isExplicit(String setting)
        {
            return explicit.contains(requireNonNull(setting, "setting is null"));
        }

        /** {@return the selected transport name} */
        public String transport()
        {
            return transport;
        }

        /** {@return the agent name, empty for a generated one} */
        public String agentName()
        {
            return agentName;
        }

        /** {@return a copy of the side channel secret, empty for none} */
        public byte[] sideChannelSecret()
        {
            return sideChannelSecret.clone();
        }

        /** {@return what {@link #allowUnauthenticatedSideChannel} set; false by default} */
        public boolean allowsUnauthenticatedSideChannel()
        {
            return allowUnauthenticatedSideChannel;
        }

        /** {@return the TLS files set with {@link #sideChannelTls}, empty when none were} */
        public Optional<TlsFiles> sideChannelTls()
        {
            return Optional.ofNullable(sideChannelTls);
        }

        /** {@return the monotonic clock set with {@link #monotonicClock}, empty for the system's} */
        public Optional<LongSupplier> monotonicClock()
        {
            return Optional.ofNullable(monotonicClock);
        }

        /** {@return the wall clock set with {@link #wallClock}, empty for the system's} */
        public Optional<InstantSource> wallClock()
        {
            return Optional.ofNullable(wallClock);
        }

        /** {@return the registry set with {@link #meterRegistry}, empty when the bridge is to own one} */
        public Optional<Object> meterRegistry()
        {
            return Optional.ofNullable(meterRegistry);
        }

        /** {@return a copy of the transport options} */
        public Map<String, String> transportConfig()
        {
            return Map.copyOf(transportConfig);
        }

        /**
         * Builds the bridge with the runtime found on the class path.
         *
         * @return the bridge.
         * @throws KvBridgeException {@code PLUGIN_UNKNOWN} when kvbridge-core is missing, or cannot load its
         *     dependencies (on the module path: launched without {@code --add-modules ALL-MODULE-PATH});
         *     {@code CONFIG_INVALID} when the {@link #meterRegistry meter registry} is not a Micrometer one,
         *     or the configuration document, the environment or the secret file has a problem (all named).
         */
        public KvBridge build()
        {
            try {
                KvBridgeRuntime runtime = ServiceLoader.load(KvBridgeRuntime.class, KvBridge.class.getClassLoader())
                        .findFirst()
                        .orElseThrow(() -> new KvBridgeException(ErrorCode.PLUGIN_UNKNOWN,
                                "no kvbridge runtime on the class path: add the kvbridge-core jar next to kvbridge-api"));
                return runtime.start(this);
            }
            catch (NoClassDefFoundError | ServiceConfigurationError e) {
                throw unresolvedRuntime(e);
            }
        }

        /**
         * kvbridge-core runs on Guice, an automatic module that cannot require its own dependencies
         * by name, so on the module path the JDK leaves those (jakarta.inject, ...) unresolved unless
         * the launch adds them, and the first class it needs fails to load deep inside the start-up.
         */
        private static KvBridgeException unresolvedRuntime(Throwable e)
        {
            boolean modulePath = KvBridge.class.getModule().isNamed();
            String fix = modulePath
                    ? "on the module path the JDK resolves only modules that something requires, and kvbridge-core's dependencies include "
                            + "automatic modules (Guice) that cannot require theirs: add --add-modules ALL-MODULE-PATH to the java command (or name the missing module)"
                    : "put every jar kvbridge-core depends on (its Maven runtime dependencies) on the class path";
            return new KvBridgeException(ErrorCode.PLUGIN_UNKNOWN, "the kvbridge runtime could not load what it needs (" + e.getMessage() + "): " + fix, e);
        }
    }
}
