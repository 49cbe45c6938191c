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

    /**
     * Returns a key for authenticating this transport's own connections between engines that share
     * the side channel's secret, such as a control socket or a data port's hello. It is derived from
     * the secret and the transport's name, so that no two transports share a key and the secret
     * itself never reaches a plugin; every instance of one transport in engines with the same secret
     * gets the same key.
     *
     * @return a fresh copy of the 32-byte key; empty when the engine runs without a shared secret,
     *     and the transport must then rely on what the operating system proves (for example the
     *     peer's user id on a Unix socket).
     */
    default Optional<byte[]> connectionKey()
    {
        return Optional.empty();
    }
}
