package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

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
     * @throws KvBridgeException {@code CONFIG_INVALID}, {@code ALREADY_REGISTERED},
     *     {@code MEMORY_KIND_UNSUPPORTED} or {@code UNSUPPORTED} (push over mixed host and device caches).
     */
    ProducerConnector producer(ConnectorSettings settings);

    /**
     * Starts the consumer connector of one rank, as {@link #producer} does for producers.
     *
     * @param settings the rank's settings.
     * @return the running connector, closed by the caller (or by {@link #close()}).
     */
    ConsumerConnector consumer(ConnectorSettings settings);

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
     * The bridge records into a Micrometer {@code CompositeMeterRegistry}; ask for
     * {@code io.micrometer.core.instrument.MeterRegistry} or {@code CompositeMeterRegistry}.
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
        private String transport = AUTO;
        private String agentName = "";
        private final Map<String, String> transportConfig = new LinkedHashMap<>();
        private byte[] sideChannelSecret = new byte[0];

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
            return this;
        }

        /**
         * Sets the shared secret that authenticates every side channel message (HMAC-SHA256 with
         * nonce and timestamp); every engine that talks to this one must use the same secret. Without
         * one (the default) the side channel accepts anything that reaches its port and warns so.
         *
         * @param secret at least 16 random bytes, or empty for none; copied.
         * @return this builder.
         */
        public Builder sideChannelSecret(byte[] secret)
        {
            this.sideChannelSecret = requireNonNull(secret, "secret is null").clone();
            return this;
        }

        /** @return the selected transport name. */
        public String transport()
        {
            return transport;
        }

        /** @return the agent name, empty for a generated one. */
        public String agentName()
        {
            return agentName;
        }

        /** @return a copy of the side channel secret, empty for none. */
        public byte[] sideChannelSecret()
        {
            return sideChannelSecret.clone();
        }

        /** @return a copy of the transport options. */
        public Map<String, String> transportConfig()
        {
            return Map.copyOf(transportConfig);
        }

        /**
         * Builds the bridge with the runtime found on the class path.
         *
         * @return the bridge.
         * @throws KvBridgeException {@code PLUGIN_UNKNOWN} when kvbridge-core is missing.
         */
        public KvBridge build()
        {
            KvBridgeRuntime runtime = ServiceLoader.load(KvBridgeRuntime.class, KvBridge.class.getClassLoader())
                    .findFirst()
                    .orElseThrow(() -> new KvBridgeException(ErrorCode.PLUGIN_UNKNOWN,
                            "no kvbridge runtime on the class path: add the kvbridge-core jar next to kvbridge-api"));
            return runtime.start(this);
        }
    }
}
