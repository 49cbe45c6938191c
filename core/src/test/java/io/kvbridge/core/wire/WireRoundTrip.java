package io.kvbridge.core.wire;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.testkit.GeometryWireFormat;
import java.util.EnumSet;

/**
 * The whole path a geometry takes to a peer: rank metadata, handshake payload, bytes, then the
 * verifier's checks and decoding on the other side.
 */
public final class WireRoundTrip
        implements GeometryWireFormat
{
    @Override
    public CacheGeometry roundTrip(CacheGeometry geometry)
    {
        RankMetadata metadata = new RankMetadata("round-trip", RankMetadata.newEpoch(), "local", new byte[] {7}, EnumSet.of(PeerCapability.PULL), geometry);
        byte[] bytes = HandshakePayload.of(metadata).encode();
        HandshakeVerifier verifier = new HandshakeVerifier(geometry.model(), CompatibilityMode.STRICT, WireLimits.DEFAULT);
        return verifier.verify(bytes).metadata().geometry();
    }
}
