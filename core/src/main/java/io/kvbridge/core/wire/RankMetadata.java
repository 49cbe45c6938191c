package io.kvbridge.core.wire;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Rank;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * Everything one rank of an engine advertises to its peers.
 *
 * @param engineId the engine's id, the same on all its ranks.
 * @param transport name of the transport the opaque metadata belongs to (e.g. {@code ucx}).
 * @param transportMetadata the transport's own connection blob, passed to its {@code connect}.
 * @param capabilities what the engine can do with peers.
 * @param geometry the rank's cache geometry, with its rank and model identity.
 */
public record RankMetadata(String engineId, String transport, byte[] transportMetadata, Set<PeerCapability> capabilities, CacheGeometry geometry)
{
    /** Validates the values and copies the mutable ones. */
    public RankMetadata
    {
        requireNonNull(engineId, "engineId is null");
        requireNonNull(transport, "transport is null");
        requireNonNull(geometry, "geometry is null");
        checkArgument(!engineId.isEmpty(), "engineId is empty");
        transportMetadata = requireNonNull(transportMetadata, "transportMetadata is null").clone();
        requireNonNull(capabilities, "capabilities is null");
        capabilities = Set.copyOf(capabilities.isEmpty() ? EnumSet.noneOf(PeerCapability.class) : EnumSet.copyOf(capabilities));
    }

    /**
     * Returns the transport's connection blob.
     *
     * @return a copy.
     */
    @Override
    public byte[] transportMetadata()
    {
        return transportMetadata.clone();
    }

    /**
     * Returns the rank the metadata describes.
     *
     * @return the geometry's rank.
     */
    public Rank rank()
    {
        return geometry.rank();
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof RankMetadata other && engineId.equals(other.engineId) && transport.equals(other.transport)
                && Arrays.equals(transportMetadata, other.transportMetadata) && capabilities.equals(other.capabilities)
                && geometry.equals(other.geometry);
    }

    @Override
    public int hashCode()
    {
        return Objects.hash(engineId, transport, Arrays.hashCode(transportMetadata), capabilities, geometry);
    }

    @Override
    public String toString()
    {
        return "RankMetadata[engineId=" + engineId + ", rank=" + geometry.rank() + ", transport=" + transport
                + ", transportMetadata=" + transportMetadata.length + " bytes, capabilities=" + PeerCapability.wireNames(capabilities)
                + ", layout=" + geometry.layoutName() + ", regions=" + geometry.regions().size() + "]";
    }
}
