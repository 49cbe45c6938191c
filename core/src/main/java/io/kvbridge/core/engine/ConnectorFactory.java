package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import com.google.inject.Inject;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.ProducerConnector;

/**
 * Starts the connectors of one bridge over its shared services. A connector is built per call,
 * from settings only known then, so the injector builds this factory and the factory the ranks.
 */
public final class ConnectorFactory
{
    private final EngineServices services;

    /**
     * Creates the factory of the bridge's connectors.
     *
     * @param services what every connector of the bridge shares.
     */
    @Inject
    public ConnectorFactory(EngineServices services)
    {
        this.services = requireNonNull(services, "services is null");
    }

    /**
     * Starts a producer rank.
     *
     * @param settings the rank's settings.
     * @return the connector, running.
     */
    public ProducerConnector producer(ConnectorSettings settings)
    {
        return new ProducerRank(services, settings, true);
    }

    /**
     * Starts a consumer rank.
     *
     * @param settings the rank's settings.
     * @return the connector, running.
     */
    public ConsumerConnector consumer(ConnectorSettings settings)
    {
        return new ConsumerRank(services, settings, true);
    }
}
