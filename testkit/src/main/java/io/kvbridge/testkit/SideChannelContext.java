package io.kvbridge.testkit;

import io.kvbridge.spi.transfer.BackendContext;
import java.util.Optional;

/**
 * What the core hands a transport it creates: the agent name and the side channel's bind address,
 * which transports with listeners of their own follow.
 *
 * @param agentName the instance's name towards peers.
 * @param host the side channel's bind address.
 */
public record SideChannelContext(String agentName, String host) implements BackendContext
{
    @Override
    public Optional<String> sideChannelHost()
    {
        return Optional.of(host);
    }
}
