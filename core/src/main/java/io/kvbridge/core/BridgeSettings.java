package io.kvbridge.core;

import static java.util.Objects.requireNonNull;

import java.util.Map;

/**
 * The validated settings a bridge is built from.
 *
 * @param transport transport name, or {@code auto}.
 * @param agentName the agent name peers see.
 * @param transportConfig options handed to the transport factory.
 * @param sideChannelSecret shared secret of the side channels, empty for none.
 */
record BridgeSettings(String transport, String agentName, Map<String, String> transportConfig, byte[] sideChannelSecret)
{
    BridgeSettings
    {
        requireNonNull(transport, "transport is null");
        requireNonNull(agentName, "agentName is null");
        transportConfig = Map.copyOf(requireNonNull(transportConfig, "transportConfig is null"));
        sideChannelSecret = requireNonNull(sideChannelSecret, "sideChannelSecret is null").clone();
    }

    /** @return a copy of the secret: a record would hand out the array itself. */
    @Override
    public byte[] sideChannelSecret()
    {
        return sideChannelSecret.clone();
    }
}
