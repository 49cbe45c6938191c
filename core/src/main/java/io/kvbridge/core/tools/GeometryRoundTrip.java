package io.kvbridge.core.tools;

import io.kvbridge.core.wire.CompatibilityMode;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.PeerCapability;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.geometry.CacheGeometry;
import java.util.EnumSet;

/**
 * The whole path a geometry takes to a peer: rank metadata, handshake payload, bytes, then the
 * verifier's checks and decoding on the other side. Public so that a cache layout written outside
 * this project can check, with {@code kvbridge-core} on its test class path, that nothing its
 * geometry says is lost on the wire: the testkit's layout conformance suite finds it there.
 */
public final class GeometryRoundTrip
{
    private GeometryRoundTrip()
    {
    }

    /**
     * Encodes a geometry as a peer's handshake would carry it and decodes the bytes again.
     *
     * @param geometry to send.
     * @return what a peer receives.
     */
    public static CacheGeometry roundTrip(CacheGeometry geometry)
    {
        RankMetadata metadata = new RankMetadata("round-trip", RankMetadata.newEpoch(), "local", new byte[] {7}, EnumSet.of(PeerCapability.PULL), geometry);
        byte[] bytes = HandshakePayload.of(metadata).encode();
        HandshakeVerifier verifier = new HandshakeVerifier(geometry.model(), CompatibilityMode.STRICT, WireLimits.DEFAULT);
        return verifier.verify(bytes).metadata().geometry();
    }
}
