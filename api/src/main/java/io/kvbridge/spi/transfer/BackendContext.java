package io.kvbridge.spi.transfer;

import java.util.Optional;

/**
 * Services the core hands a transport when it creates one. New services arrive as default methods.
 */
public interface BackendContext
{
    /**
     * Returns the name this transport instance goes by towards peers; unique per process.
     *
     * @return the agent name.
     */
    String agentName();

    /**
     * Returns the address the engine's side channel binds to, so that a transport opening listeners
     * of its own can keep them on the same interface instead of every interface of the host.
     *
     * @return the host or address as configured, e.g. {@code 127.0.0.1} or {@code 0.0.0.0}; empty
     *     when the caller does not say, and the transport then keeps its own default.
     */
    default Optional<String> sideChannelHost()
    {
        return Optional.empty();
    }
}
