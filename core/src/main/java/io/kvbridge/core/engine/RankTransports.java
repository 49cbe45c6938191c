package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Creates each connector's own transport instance from the bridge's selected factory, with the
 * bridge's options, named {@code <agent prefix>-<role>-pp<p>-tp<t>-<n>} so that peers and logs can
 * tell the ranks apart, and told the address the connector's side channel binds to and its
 * connection key.
 */
public final class RankTransports
{
    private final TransferBackendFactory factory;
    private final Map<String, String> config;
    private final String agentPrefix;
    private final byte[] secret;
    private final AtomicInteger instances = new AtomicInteger();

    /**
     * Creates the transports of one bridge's ranks.
     *
     * @param factory the selected transport's factory.
     * @param config options for every instance.
     * @param agentPrefix agent names of the instances start with it.
     * @param secret the engine's shared secret, which each instance's connection key derives from; empty for none.
     */
    public RankTransports(TransferBackendFactory factory, Map<String, String> config, String agentPrefix, byte[] secret)
    {
        this.secret = requireNonNull(secret, "secret is null").clone();
        this.factory = requireNonNull(factory, "factory is null");
        this.config = Map.copyOf(requireNonNull(config, "config is null"));
        this.agentPrefix = requireNonNull(agentPrefix, "agentPrefix is null");
    }

    /** {@return the factory every instance comes from} */
    public TransferBackendFactory factory()
    {
        return factory;
    }

    TransferBackend create(String role, ConnectorSettings settings)
    {
        String agent = agentPrefix + "-" + role + "-pp" + settings.geometry().rank().ppRank() + "-tp" + settings.geometry().rank().tpRank() + "-"
                + instances.incrementAndGet();
        return factory.create(config, EngineBackendContext.of(agent, settings.bindHost(), secret, factory.name()));
    }
}
