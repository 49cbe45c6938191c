package io.kvbridge.core.plugin;

import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.TransferBackendFactory;

/**
 * A transport factory with the result of its one probe.
 *
 * @param factory the factory.
 * @param availability what its probe reported.
 * @param source where the factory class was loaded from.
 */
public record DiscoveredTransport(TransferBackendFactory factory, Availability availability, String source)
{
    /** @return the transport name. */
    public String name()
    {
        return factory.name();
    }
}
