package io.kvbridge.backend.nixl;

import io.kvbridge.spi.transfer.Peer;

/** A peer whose NIXL metadata the owning instance loaded. */
final class NixlPeer implements Peer
{
    final NixlTransferBackend owner;
    private final String name;
    // replaced when the peer's metadata is refreshed; read when lists are prepared
    volatile RegionTable regions;
    volatile boolean connected = true;

    NixlPeer(NixlTransferBackend owner, String name, RegionTable regions)
    {
        this.owner = owner;
        this.name = name;
        this.regions = regions;
    }

    @Override
    public String name()
    {
        return name;
    }

    @Override
    public String toString()
    {
        return "NixlPeer[" + name + "]";
    }
}
