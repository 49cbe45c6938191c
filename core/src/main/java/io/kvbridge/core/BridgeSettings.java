package io.kvbridge.core;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.config.BridgeConfig;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The validated settings a bridge is built from.
 *
 * @param transport transport name, or {@code auto}.
 * @param agentName the agent name peers see.
 * @param transportConfig options handed to the transport factory.
 * @param sideChannelSecret shared secret of the side channels, empty for none.
 * @param summaryInterval how often the one-line transfer summary is logged; zero for never.
 * @param config the configuration document and environment, for the connectors' settings, the
 *     role, the layout and the per-transport options.
 * @param sideChannelTls TLS of the side channels, null for plain TCP.
 * @param allowUnauthenticated whether a side channel may serve an address other hosts reach without
 *     authenticating its peers.
 */
record BridgeSettings(String transport, String agentName, Map<String, String> transportConfig, byte[] sideChannelSecret, Duration summaryInterval,
        BridgeConfig config, SideChannelTls sideChannelTls, boolean allowUnauthenticated)
{
    /** How often a bridge built through {@code KvBridge.builder()} logs its transfer summary. */
    static final Duration SUMMARY_INTERVAL = Duration.ofSeconds(10);

    BridgeSettings
    {
        requireNonNull(transport, "transport is null");
        requireNonNull(agentName, "agentName is null");
        transportConfig = Map.copyOf(requireNonNull(transportConfig, "transportConfig is null"));
        sideChannelSecret = requireNonNull(sideChannelSecret, "sideChannelSecret is null").clone();
        requireNonNull(summaryInterval, "summaryInterval is null");
        KvBridgeException.checkArgument(!summaryInterval.isNegative(), "summaryInterval=%s is negative; pass zero for no summary", summaryInterval);
        requireNonNull(config, "config is null");
    }

    /** Settings without a configuration document. */
    BridgeSettings(String transport, String agentName, Map<String, String> transportConfig, byte[] sideChannelSecret, Duration summaryInterval)
    {
        this(transport, agentName, transportConfig, sideChannelSecret, summaryInterval, BridgeConfig.EMPTY, null, false);
    }

    /**
     * Returns the options the selected transport is created with: those the configuration gives
     * for it, overridden by the ones given to the builder.
     *
     * @param selected the selected transport's name.
     * @return the options.
     */
    Map<String, String> transportConfig(String selected)
    {
        Map<String, String> options = new LinkedHashMap<>(config.optionsOf(selected));
        options.putAll(transportConfig);
        return options;
    }

    /** @return a copy of the secret: a record would hand out the array itself. */
    @Override
    public byte[] sideChannelSecret()
    {
        return sideChannelSecret.clone();
    }
}
