package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.wire.ConnectionKeys;
import io.kvbridge.spi.transfer.BackendContext;
import java.util.Optional;

/**
 * What the core tells a transport it creates: its agent name, the address the engine's side
 * channel binds to, which transports with listeners of their own follow, and the key the transport
 * authenticates its own connections with when the engine has a shared secret.
 *
 * @param agentName the instance's name towards peers.
 * @param bindHost the side channel's bind address, as configured.
 * @param key the transport's connection key (see {@link ConnectionKeys}); empty without a secret.
 */
public record EngineBackendContext(String agentName, String bindHost, Optional<byte[]> key) implements BackendContext
{
    /** Validates and copies the key. */
    public EngineBackendContext
    {
        requireNonNull(agentName, "agentName is null");
        requireNonNull(bindHost, "bindHost is null");
        key = requireNonNull(key, "key is null").map(byte[]::clone);
    }

    /**
     * Creates the context of one instance of a transport.
     *
     * @param agentName the instance's name towards peers.
     * @param bindHost the side channel's bind address.
     * @param secret the engine's shared secret; empty for none.
     * @param transport the transport's name, which the connection key is derived for.
     * @return the context.
     */
    public static EngineBackendContext of(String agentName, String bindHost, byte[] secret, String transport)
    {
        return new EngineBackendContext(agentName, bindHost, ConnectionKeys.derive(secret, transport));
    }

    @Override
    public Optional<String> sideChannelHost()
    {
        return Optional.of(bindHost);
    }

    @Override
    public Optional<byte[]> connectionKey()
    {
        return key.map(byte[]::clone);
    }
}
