package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.BackendContext;
import java.util.Optional;

/** What the core hands the transport: the agent name and the side channel's bind address. */
record SideChannelContext(String agentName, String host) implements BackendContext
{
    @Override
    public Optional<String> sideChannelHost()
    {
        return Optional.of(host);
    }
}
