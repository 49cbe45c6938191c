package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.transfer.BackendContext;
import java.util.Optional;

/**
 * What the core tells a transport it creates: its agent name and the address the engine's side
 * channel binds to, which transports with listeners of their own follow.
 *
 * @param agentName the instance's name towards peers.
 * @param bindHost the side channel's bind address, as configured.
 */
public record EngineBackendContext(String agentName, String bindHost) implements BackendContext
{
    /** Validates. */
    public EngineBackendContext
    {
        requireNonNull(agentName, "agentName is null");
        requireNonNull(bindHost, "bindHost is null");
    }

    @Override
    public Optional<String> sideChannelHost()
    {
        return Optional.of(bindHost);
    }
}
