package io.kvbridge.core.wire;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Rank;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * Everything one rank of an engine advertises to its peers.
 *
 * @param engineId the engine's id, the same on all its ranks.
 * @param epoch the incarnation of the process serving the rank's side channel, drawn when it started
 *     (see {@link #newEpoch}): the same on every rank that side channel serves, different after a
 *     restart, so peers tell a restarted engine from the one before. Never {@link #UNKNOWN_EPOCH}.
 * @param transport name of the transport the opaque metadata belongs to (e.g. {@code ucx}).
 * @param transportMetadata the transport's own connection blob, passed to its {@code connect}.
 * @param capabilities what the engine can do with peers.
 * @param geometry the rank's cache geometry, with its rank and model identity.
 */
public record RankMetadata(String engineId, long epoch, String transport, byte[] transportMetadata, Set<PeerCapability> capabilities, CacheGeometry geometry)
{
    /** The epoch no engine draws, standing for "not known" where an epoch is optional. */
    public static final long UNKNOWN_EPOCH = TransferParams.UNKNOWN_EPOCH;

    private static final SecureRandom EPOCHS = new SecureRandom();

    /** Validates the values and copies the mutable ones. */
    public RankMetadata
    {
        requireNonNull(engineId, "engineId is null");
        requireNonNull(transport, "transport is null");
        requireNonNull(geometry, "geometry is null");
        checkArgument(!engineId.isEmpty(), "engineId is empty");
        checkArgument(epoch != UNKNOWN_EPOCH, "epoch=0 of engine %s is reserved for 'not known' (draw one with RankMetadata.newEpoch)", engineId);
        transportMetadata = requireNonNull(transportMetadata, "transportMetadata is null").clone();
        requireNonNull(capabilities, "capabilities is null");
        capabilities = Set.copyOf(capabilities.isEmpty() ? EnumSet.noneOf(PeerCapability.class) : EnumSet.copyOf(capabilities));
    }

    /**
     * Draws the epoch of a process incarnation: 64 bits from a {@link SecureRandom}, never
     * {@link #UNKNOWN_EPOCH}. Random rather than a counter or a clock, because nothing survives a
     * restart to continue a counter from and two hosts' clocks may agree; 64 random bits repeat
     * after about four billion restarts of one engine, which is never in practice.
     *
     * @return the epoch.
     */
    public static long newEpoch()
    {
        long epoch;
        do {
            epoch = EPOCHS.nextLong();
        }
        while (epoch == UNKNOWN_EPOCH);
        return epoch;
    }

    /**
     * Formats an epoch as logs and errors show it.
     *
     * @param epoch the epoch.
     * @return 16 lower-case hex digits.
     */
    public static String formatEpoch(long epoch)
    {
        return TransferParams.formatEpoch(epoch);
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
        return o instanceof RankMetadata other && engineId.equals(other.engineId) && epoch == other.epoch && transport.equals(other.transport)
                && Arrays.equals(transportMetadata, other.transportMetadata) && capabilities.equals(other.capabilities)
                && geometry.equals(other.geometry);
    }

    @Override
    public int hashCode()
    {
        return Objects.hash(engineId, epoch, transport, Arrays.hashCode(transportMetadata), capabilities, geometry);
    }

    @Override
    public String toString()
    {
        return "RankMetadata[engineId=" + engineId + ", epoch=" + formatEpoch(epoch) + ", rank=" + geometry.rank() + ", transport=" + transport
                + ", transportMetadata=" + transportMetadata.length + " bytes, capabilities=" + PeerCapability.wireNames(capabilities)
                + ", layout=" + geometry.layoutName() + ", regions=" + geometry.regions().size() + "]";
    }
}
