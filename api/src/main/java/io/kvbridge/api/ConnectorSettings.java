package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.check;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.memory.MemoryKind;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * How one rank's connector runs. Built with {@link #builder(String, CacheGeometry)}; every value not
 * set keeps its default. Fields marked <i>producer</i> or <i>consumer</i> are ignored by the other role.
 *
 * <p>Connectors of one engine created through one {@link KvBridge} share one side channel: the first
 * binds {@code bindHost:port}, later ones must name the same values.
 *
 * @param engineId the engine's id, the same on all its ranks; printable ASCII without spaces.
 * @param geometry this rank's cache (its {@link io.kvbridge.spi.geometry.Rank} says which rank);
 *     the connector registers every allocation with its transport.
 * @param bindHost address the side channel binds to (default {@code 127.0.0.1}).
 * @param port side channel port; 0 picks a free one (default).
 * @param advertisedHost host peers use to reach the side channel (default: {@code bindHost}).
 * @param stageSideChannels <i>producer</i>: side channels of the engine's pipeline stages served by
 *     other processes, index = {@code ppRank}; empty (default) when every stage runs in this process.
 * @param modes transfer modes the rank serves (producer) or may use (consumer); default both.
 * @param leaseDuration <i>producer</i>: how long finished blocks are held without news (default 30 s).
 * @param transferTimeout deadline of one posted transfer (default 30 s).
 * @param registrationTimeout <i>consumer</i>: how long a push registration waits for the producer's
 *     writes (default 60 s).
 * @param failurePolicy <i>consumer</i>: reported with every failure (default {@code FAIL}).
 * @param cacheSpec the cache spec the geometry was described from, or null when not given. It gives
 *     the model's layers with their cache groups (needed to route layers by name when a pooled
 *     layout's regions overlay several groups) and this engine's pipeline stages (needed by a
 *     consumer that is one stage of several, to tell producers how many decoder ranks address them).
 * @param layout the layout that described the geometry, or null. The connector asks it whether a
 *     peer's geometry can be paired ({@link CacheLayout#incompatibility}, at the handshake, before
 *     anything of the peer is prepared) and how many trailing blocks of each group a request
 *     exchanges ({@link CacheLayout#exchangedBlocks}, sliding-window clipping). When null, a bridge
 *     uses the layout registered under the geometry's {@code layoutName} with its default options;
 *     without one nothing is clipped and no layout check runs.
 * @param integrity whether the rank computes (producer) or requires and checks (consumer) a CRC32C of
 *     every block it moves (default {@link Integrity#OFF}); host memory only.
 * @param streamMinTokens <i>producer</i>: a request announced with
 *     {@link ProducerConnector#prefillStarted} that spans fewer tokens than this (its longest group's
 *     blocks times the block size) moves whole, in one write once all its layers are computed, because
 *     one write per layer costs more than it saves on so little data (default
 *     {@link #DEFAULT_STREAM_MIN_TOKENS}; 0 streams every request).
 */
public record ConnectorSettings(
        String engineId,
        CacheGeometry geometry,
        String bindHost,
        int port,
        String advertisedHost,
        List<SideChannelAddress> stageSideChannels,
        Set<TransferMode> modes,
        Duration leaseDuration,
        Duration transferTimeout,
        Duration registrationTimeout,
        FailurePolicy failurePolicy,
        ModelCacheSpec cacheSpec,
        CacheLayout layout,
        Integrity integrity,
        int streamMinTokens)
{
    /** The default {@link #streamMinTokens}; how it was measured is in the project's benchmarks/results/streaming.md. */
    public static final int DEFAULT_STREAM_MIN_TOKENS = 256;

    /** Validates and copies. */
    public ConnectorSettings
    {
        requireNonNull(engineId, "engineId is null");
        requireNonNull(geometry, "geometry is null");
        requireNonNull(bindHost, "bindHost is null");
        requireNonNull(advertisedHost, "advertisedHost is null");
        requireNonNull(failurePolicy, "failurePolicy is null");
        stageSideChannels = List.copyOf(requireNonNull(stageSideChannels, "stageSideChannels is null"));
        requireNonNull(modes, "modes is null");
        check(!modes.isEmpty(), ErrorCode.CONFIG_INVALID, "modes is empty (expected: push, pull or both)");
        modes = Set.copyOf(EnumSet.copyOf(modes));
        check(!engineId.isEmpty() && engineId.chars().allMatch(c -> c > 0x20 && c < 0x7f), ErrorCode.CONFIG_INVALID,
                "engineId=%s is not 1 or more printable ASCII characters without spaces", engineId);
        check(port >= 0 && port <= 65_535, ErrorCode.CONFIG_INVALID, "port=%d is outside [0, 65535]", port);
        check(!bindHost.isEmpty(), ErrorCode.CONFIG_INVALID, "bindHost is empty");
        check(stageSideChannels.isEmpty() || stageSideChannels.size() == geometry.rank().ppSize(), ErrorCode.CONFIG_INVALID,
                "%d stageSideChannels given for ppSize=%d (expected: none, or one per pipeline stage)", stageSideChannels.size(),
                geometry.rank().ppSize());
        positive("leaseDuration", leaseDuration);
        positive("transferTimeout", transferTimeout);
        positive("registrationTimeout", registrationTimeout);
        check(leaseDuration.toMillis() >= 6, ErrorCode.CONFIG_INVALID, "leaseDuration=%s is shorter than 6 ms", leaseDuration);
        check(layout == null || layout.name().equals(geometry.layoutName()), ErrorCode.CONFIG_INVALID,
                "layout %s was given for a geometry described by layout %s (expected: the layout that described the geometry)",
                layout == null ? null : layout.name(), geometry.layoutName());
        check(cacheSpec == null || cacheSpec.identity().equals(geometry.model()) && cacheSpec.ppSize() == geometry.rank().ppSize(), ErrorCode.CONFIG_INVALID,
                "cacheSpec describes model %s with %d pipeline stages but the geometry is rank %s of model %s (expected: the spec the geometry was described from)",
                cacheSpec == null ? null : cacheSpec.identity().model(), cacheSpec == null ? 0 : cacheSpec.ppSize(), geometry.rank(), geometry.model().model());
        requireNonNull(integrity, "integrity is null");
        check(streamMinTokens >= 0, ErrorCode.CONFIG_INVALID, "streamMinTokens=%d is negative (expected: 0 to stream every request, or more)",
                streamMinTokens);
        for (Region region : geometry.regions()) {
            // reading device memory needs a kernel or a staging copy to host, neither of which the connector has
            check(integrity == Integrity.OFF || region.memoryKind() == MemoryKind.HOST, ErrorCode.CONFIG_INVALID,
                    "integrity=%s needs host memory but region %s is %s memory of device %d; set integrity=off for a device cache",
                    integrity.configName(), region.name(), region.memoryKind(), region.device());
        }
    }

    /**
     * Creates settings with the default {@link #streamMinTokens}.
     *
     * @param engineId the engine's id.
     * @param geometry this rank's cache.
     * @param bindHost address the side channel binds to.
     * @param port side channel port.
     * @param advertisedHost host peers use to reach the side channel.
     * @param stageSideChannels side channels of stages served by other processes.
     * @param modes transfer modes.
     * @param leaseDuration producer lease.
     * @param transferTimeout deadline of one posted transfer.
     * @param registrationTimeout consumer push watchdog.
     * @param failurePolicy consumer failure policy.
     * @param cacheSpec the cache spec, or null.
     * @param layout the layout, or null.
     * @param integrity block digests.
     */
    public ConnectorSettings(String engineId, CacheGeometry geometry, String bindHost, int port, String advertisedHost,
            List<SideChannelAddress> stageSideChannels, Set<TransferMode> modes, Duration leaseDuration, Duration transferTimeout,
            Duration registrationTimeout, FailurePolicy failurePolicy, ModelCacheSpec cacheSpec, CacheLayout layout, Integrity integrity)
    {
        this(engineId, geometry, bindHost, port, advertisedHost, stageSideChannels, modes, leaseDuration, transferTimeout, registrationTimeout,
                failurePolicy, cacheSpec, layout, integrity, DEFAULT_STREAM_MIN_TOKENS);
    }

    /**
     * Creates settings without block digests ({@link Integrity#OFF}).
     *
     * @param engineId the engine's id.
     * @param geometry this rank's cache.
     * @param bindHost address the side channel binds to.
     * @param port side channel port.
     * @param advertisedHost host peers use to reach the side channel.
     * @param stageSideChannels side channels of stages served by other processes.
     * @param modes transfer modes.
     * @param leaseDuration producer lease.
     * @param transferTimeout deadline of one posted transfer.
     * @param registrationTimeout consumer push watchdog.
     * @param failurePolicy consumer failure policy.
     * @param cacheSpec the cache spec, or null.
     * @param layout the layout, or null.
     */
    public ConnectorSettings(String engineId, CacheGeometry geometry, String bindHost, int port, String advertisedHost,
            List<SideChannelAddress> stageSideChannels, Set<TransferMode> modes, Duration leaseDuration, Duration transferTimeout,
            Duration registrationTimeout, FailurePolicy failurePolicy, ModelCacheSpec cacheSpec, CacheLayout layout)
    {
        this(engineId, geometry, bindHost, port, advertisedHost, stageSideChannels, modes, leaseDuration, transferTimeout, registrationTimeout,
                failurePolicy, cacheSpec, layout, Integrity.OFF);
    }

    /**
     * Returns these settings with another layout; what a bridge uses to supply the registered layout.
     *
     * @param layout the layout that described the geometry.
     * @return the copy.
     */
    public ConnectorSettings withLayout(CacheLayout layout)
    {
        return new ConnectorSettings(engineId, geometry, bindHost, port, advertisedHost, stageSideChannels, modes, leaseDuration, transferTimeout,
                registrationTimeout, failurePolicy, cacheSpec, layout, integrity, streamMinTokens);
    }

    private static void positive(String name, Duration value)
    {
        requireNonNull(value, name + " is null");
        check(!value.isNegative() && !value.isZero(), ErrorCode.CONFIG_INVALID, "%s=%s is not positive", name, value);
    }

    /** The side channel's bind address unless one is given: loopback, so that nothing is reachable from other hosts by default. */
    public static final String DEFAULT_BIND_HOST = "127.0.0.1";

    /**
     * Starts settings with the defaults.
     *
     * @param engineId the engine's id.
     * @param geometry this rank's cache.
     * @return a builder.
     */
    public static Builder builder(String engineId, CacheGeometry geometry)
    {
        return new Builder(engineId, geometry);
    }

    /** Collects settings. Not thread-safe. */
    public static final class Builder
    {
        private final String engineId;
        private final CacheGeometry geometry;
        private String bindHost = DEFAULT_BIND_HOST;
        private int port;
        private String advertisedHost;
        private List<SideChannelAddress> stageSideChannels = List.of();
        private Set<TransferMode> modes = EnumSet.allOf(TransferMode.class);
        private Duration leaseDuration = Duration.ofSeconds(30);
        private Duration transferTimeout = Duration.ofSeconds(30);
        private Duration registrationTimeout = Duration.ofSeconds(60);
        private FailurePolicy failurePolicy = FailurePolicy.FAIL;
        private ModelCacheSpec cacheSpec;
        private CacheLayout layout;
        private Integrity integrity = Integrity.OFF;
        private int streamMinTokens = DEFAULT_STREAM_MIN_TOKENS;

        private Builder(String engineId, CacheGeometry geometry)
        {
            this.engineId = engineId;
            this.geometry = geometry;
        }

        /**
         * Sets where this connector's side channel listens.
         *
         * @param host bind address.
         * @param port port, 0 for any.
         * @return this builder.
         */
        public Builder sideChannel(String host, int port)
        {
            this.bindHost = host;
            this.port = port;
            return this;
        }

        /**
         * Sets the host peers are told to reach the side channel at, when it is not the bind address.
         *
         * @param host the host peers reach the side channel at.
         * @return this builder.
         */
        public Builder advertisedHost(String host)
        {
            this.advertisedHost = host;
            return this;
        }

        /**
         * Sets the side channels of the engine's pipeline stages served by other processes.
         *
         * @param addresses side channel of each pipeline stage.
         * @return this builder.
         */
        public Builder stageSideChannels(List<SideChannelAddress> addresses)
        {
            this.stageSideChannels = addresses;
            return this;
        }

        /**
         * Sets the transfer modes the rank serves (producer) or may use (consumer).
         *
         * @param modes the transfer modes.
         * @return this builder.
         */
        public Builder modes(Set<TransferMode> modes)
        {
            this.modes = modes;
            return this;
        }

        /**
         * Sets how long a producer holds finished blocks without news.
         *
         * @param lease producer lease.
         * @return this builder.
         */
        public Builder leaseDuration(Duration lease)
        {
            this.leaseDuration = lease;
            return this;
        }

        /**
         * Sets the deadline of a posted transfer.
         *
         * @param timeout deadline of a posted transfer.
         * @return this builder.
         */
        public Builder transferTimeout(Duration timeout)
        {
            this.transferTimeout = timeout;
            return this;
        }

        /**
         * Sets how long a consumer's push registration waits for the producer's writes.
         *
         * @param timeout consumer push watchdog.
         * @return this builder.
         */
        public Builder registrationTimeout(Duration timeout)
        {
            this.registrationTimeout = timeout;
            return this;
        }

        /**
         * Sets the failure policy a consumer reports with every failure.
         *
         * @param policy consumer failure policy.
         * @return this builder.
         */
        public Builder failurePolicy(FailurePolicy policy)
        {
            this.failurePolicy = policy;
            return this;
        }

        /**
         * Sets the cache spec the geometry was described from.
         *
         * @param spec the cache spec the geometry was described from.
         * @return this builder.
         */
        public Builder cacheSpec(ModelCacheSpec spec)
        {
            this.cacheSpec = spec;
            return this;
        }

        /**
         * Sets the layout that described the geometry.
         *
         * @param layout the layout that described the geometry.
         * @return this builder.
         */
        public Builder layout(CacheLayout layout)
        {
            this.layout = layout;
            return this;
        }

        /**
         * Sets whether the rank computes (producer) or requires and checks (consumer) block digests.
         *
         * @param integrity the setting.
         * @return this builder.
         */
        public Builder integrity(Integrity integrity)
        {
            this.integrity = integrity;
            return this;
        }

        /**
         * Sets the size below which a request announced for streaming moves whole.
         *
         * @param tokens the fewest tokens a request streams with; 0 streams every request.
         * @return this builder.
         */
        public Builder streamMinTokens(int tokens)
        {
            this.streamMinTokens = tokens;
            return this;
        }

        /**
         * Builds the validated settings.
         *
         * @return the settings.
         * @throws io.kvbridge.spi.KvBridgeException {@code CONFIG_INVALID} for an invalid value.
         */
        public ConnectorSettings build()
        {
            return new ConnectorSettings(engineId, geometry, bindHost, port, advertisedHost == null ? bindHost : advertisedHost,
                    stageSideChannels, modes, leaseDuration, transferTimeout, registrationTimeout, failurePolicy, cacheSpec, layout, integrity,
                    streamMinTokens);
        }
    }
}
