package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.core.sidechannel.RemoteEngine;
import java.net.InetSocketAddress;

/**
 * One remote engine's side channel as a rank knows it: the engine's id and the address its
 * parameters or registration named. The stages of one engine served by different processes share
 * an id but not an address, so both make the key. Built once per side channel a request names, so
 * that looking a remote engine up allocates nothing.
 */
final class RemoteKey
{
    private final String engineId;
    private final SideChannelAddress address;
    // what the handshake cache (RemoteEngines) is keyed by
    private final String cacheKey;

    RemoteKey(String engineId, SideChannelAddress address)
    {
        this.engineId = requireNonNull(engineId, "engineId is null");
        this.address = requireNonNull(address, "address is null");
        this.cacheKey = engineId + "@" + address;
    }

    /** {@return the key of an engine a handshake answered for, at the address it was asked at} */
    static RemoteKey of(RemoteEngine engine)
    {
        return new RemoteKey(engine.engineId(), new SideChannelAddress(engine.address().getHostString(), engine.address().getPort()));
    }

    String engineId()
    {
        return engineId;
    }

    InetSocketAddress socketAddress()
    {
        return new InetSocketAddress(address.host(), address.port());
    }

    /** {@return the key {@link io.kvbridge.core.sidechannel.RemoteEngines} caches the engine's handshake under} */
    String cacheKey()
    {
        return cacheKey;
    }

    @Override
    public boolean equals(Object other)
    {
        return other instanceof RemoteKey key && engineId.equals(key.engineId) && address.equals(key.address);
    }

    @Override
    public int hashCode()
    {
        return 31 * engineId.hashCode() + address.hashCode();
    }

    @Override
    public String toString()
    {
        return cacheKey;
    }
}
