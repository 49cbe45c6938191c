package io.kvbridge.core.config;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.FailurePolicy;
import io.kvbridge.api.Integrity;
import io.kvbridge.api.TransferMode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What a configuration document or the environment says about a bridge and its connectors. Every
 * value is optional: {@code null} (an empty map for the maps) means "not given here", so that
 * sources can be layered with {@link #overriddenBy} before the defaults apply.
 *
 * @param role which connectors the engine runs.
 * @param engineId the engine's id, the same on all its ranks.
 * @param transport transport name, or {@code auto}.
 * @param transportOptions options per transport name; the selected transport gets its own.
 * @param agentName the agent name peers see.
 * @param sideChannelHost the address the side channel binds to.
 * @param sideChannelPort the side channel's port, 0 for any.
 * @param advertisedHost the host peers reach the side channel at.
 * @param secretFile the file holding the side channel secret.
 * @param failurePolicy what a consumer reports failed blocks with.
 * @param leaseDuration how long a producer holds finished blocks without news.
 * @param transferTimeout the deadline of one posted transfer.
 * @param registrationTimeout how long a push registration waits for the producer's writes.
 * @param modes the transfer modes served or used.
 * @param layout the cache layout's name.
 * @param layoutOptions the cache layout's options.
 * @param discovery the discovery directory's location, such as {@code etcd://10.0.0.1:2379,10.0.0.2:2379}.
 * @param discoveryLeaseTtl how long the directory keeps a rank's entry after its engine's last keep-alive.
 * @param tls the side channel's TLS files and modes; {@link TlsFiles#EMPTY} when none are given.
 * @param allowUnauthenticated whether the side channel may serve an address other hosts reach without
 *     a secret or TLS requiring client certificates.
 * @param integrity whether connectors compute (producer) or require and check (consumer) a CRC32C
 *     of every block.
 */
public record BridgeConfig(
        Role role,
        String engineId,
        String transport,
        Map<String, Map<String, String>> transportOptions,
        String agentName,
        String sideChannelHost,
        Integer sideChannelPort,
        String advertisedHost,
        Path secretFile,
        FailurePolicy failurePolicy,
        Duration leaseDuration,
        Duration transferTimeout,
        Duration registrationTimeout,
        Set<TransferMode> modes,
        String layout,
        Map<String, String> layoutOptions,
        String discovery,
        Duration discoveryLeaseTtl,
        TlsFiles tls,
        Boolean allowUnauthenticated,
        Integrity integrity)
{
    /** Nothing given. */
    public static final BridgeConfig EMPTY = new BridgeConfig(null, null, null, Map.of(), null, null, null, null, null, null, null, null, null,
            null, null, Map.of(), null, null, TlsFiles.EMPTY, null, null);

    /** Which connectors an engine runs; vLLM's {@code kv_role}. */
    public enum Role
    {
        /** Prefill: producer connectors only. */
        PRODUCER("kv_producer"),
        /** Decode: consumer connectors only. */
        CONSUMER("kv_consumer"),
        /** Both kinds. */
        BOTH("kv_both");

        private final String configName;

        Role(String configName)
        {
            this.configName = configName;
        }

        /**
         * Returns the role's name in the document.
         *
         * @return the name as vLLM writes it, such as {@code kv_producer}.
         */
        public String configName()
        {
            return configName;
        }

        /**
         * Tells whether the role runs producer connectors.
         *
         * @return whether it does.
         */
        public boolean produces()
        {
            return this != CONSUMER;
        }

        /**
         * Tells whether the role runs consumer connectors.
         *
         * @return whether it does.
         */
        public boolean consumes()
        {
            return this != PRODUCER;
        }
    }

    /**
     * A configuration that says nothing about integrity.
     *
     * @param role which connectors the engine runs.
     * @param engineId the engine's id.
     * @param transport transport name, or {@code auto}.
     * @param transportOptions options per transport name.
     * @param agentName the agent name peers see.
     * @param sideChannelHost the address the side channel binds to.
     * @param sideChannelPort the side channel's port.
     * @param advertisedHost the host peers reach the side channel at.
     * @param secretFile the file holding the side channel secret.
     * @param failurePolicy what a consumer reports failed blocks with.
     * @param leaseDuration how long a producer holds finished blocks.
     * @param transferTimeout the deadline of one posted transfer.
     * @param registrationTimeout how long a push registration waits.
     * @param modes the transfer modes.
     * @param layout the cache layout's name.
     * @param layoutOptions the cache layout's options.
     * @param discovery the discovery directory's location.
     * @param discoveryLeaseTtl how long the directory keeps a rank's entry.
     * @param tls the side channel's TLS files and modes.
     * @param allowUnauthenticated whether the side channel may serve without authentication.
     */
    public BridgeConfig(Role role, String engineId, String transport, Map<String, Map<String, String>> transportOptions, String agentName,
            String sideChannelHost, Integer sideChannelPort, String advertisedHost, Path secretFile, FailurePolicy failurePolicy,
            Duration leaseDuration, Duration transferTimeout, Duration registrationTimeout, Set<TransferMode> modes, String layout,
            Map<String, String> layoutOptions, String discovery, Duration discoveryLeaseTtl, TlsFiles tls, Boolean allowUnauthenticated)
    {
        this(role, engineId, transport, transportOptions, agentName, sideChannelHost, sideChannelPort, advertisedHost, secretFile, failurePolicy,
                leaseDuration, transferTimeout, registrationTimeout, modes, layout, layoutOptions, discovery, discoveryLeaseTtl, tls,
                allowUnauthenticated, null);
    }

    /** Copies the maps and the modes. */
    public BridgeConfig
    {
        Map<String, Map<String, String>> options = new TreeMap<>();
        requireNonNull(transportOptions, "transportOptions is null").forEach((name, values) -> options.put(name, Map.copyOf(values)));
        transportOptions = Map.copyOf(options);
        layoutOptions = Map.copyOf(requireNonNull(layoutOptions, "layoutOptions is null"));
        modes = modes == null ? null : Set.copyOf(EnumSet.copyOf(modes));
        requireNonNull(tls, "tls is null");
    }

    /**
     * Layers another source over this one: each value the other gives replaces this one's; transport
     * and layout options are merged key by key.
     *
     * @param other the source that takes precedence.
     * @return the combination.
     */
    public BridgeConfig overriddenBy(BridgeConfig other)
    {
        Map<String, Map<String, String>> options = new LinkedHashMap<>();
        transportOptions.forEach((name, values) -> options.put(name, new LinkedHashMap<>(values)));
        other.transportOptions.forEach((name, values) -> options.computeIfAbsent(name, key -> new LinkedHashMap<>()).putAll(values));
        Map<String, String> layoutMerged = new LinkedHashMap<>(layoutOptions);
        layoutMerged.putAll(other.layoutOptions);
        return new BridgeConfig(pick(role, other.role), pick(engineId, other.engineId), pick(transport, other.transport), options,
                pick(agentName, other.agentName), pick(sideChannelHost, other.sideChannelHost), pick(sideChannelPort, other.sideChannelPort),
                pick(advertisedHost, other.advertisedHost), pick(secretFile, other.secretFile), pick(failurePolicy, other.failurePolicy),
                pick(leaseDuration, other.leaseDuration), pick(transferTimeout, other.transferTimeout),
                pick(registrationTimeout, other.registrationTimeout), pick(modes, other.modes), pick(layout, other.layout), layoutMerged,
                pick(discovery, other.discovery), pick(discoveryLeaseTtl, other.discoveryLeaseTtl), tls.overriddenBy(other.tls),
                pick(allowUnauthenticated, other.allowUnauthenticated), pick(integrity, other.integrity));
    }

    /**
     * Returns the options configured for one transport.
     *
     * @param name the selected transport's name.
     * @return its options; empty when none are configured.
     */
    public Map<String, String> optionsOf(String name)
    {
        return transportOptions.getOrDefault(name, Map.of());
    }

    private static <T> T pick(T base, T override)
    {
        return override != null ? override : base;
    }
}
