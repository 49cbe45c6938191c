package io.kvbridge.core.wire;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.ModelIdentity;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the payload bytes a peer served into checked metadata, in the order that keeps failures
 * clear: outer payload and wire version, then the compatibility hash (before the metadata is
 * decoded at all), then the metadata with every record re-validated, then the peer's own
 * consistency (its identity must hash to the hash it advertised) and the untrusted-geometry checks.
 */
public final class HandshakeVerifier
{
    private static final Logger LOG = LoggerFactory.getLogger(HandshakeVerifier.class);

    private final ModelIdentity localIdentity;
    private final String localHash;
    private final CompatibilityMode mode;
    private final WireLimits limits;

    /**
     * Creates a verifier.
     *
     * @param localIdentity this engine's model identity.
     * @param mode how a hash mismatch is handled.
     * @param limits bounds every decoder enforces.
     */
    public HandshakeVerifier(ModelIdentity localIdentity, CompatibilityMode mode, WireLimits limits)
    {
        this.localIdentity = requireNonNull(localIdentity, "localIdentity is null");
        this.mode = requireNonNull(mode, "mode is null");
        this.limits = requireNonNull(limits, "limits is null");
        this.localHash = CompatibilityHash.of(localIdentity);
    }

    /**
     * A payload that passed every check.
     *
     * @param metadata what the peer's rank advertises.
     * @param geometry the checked view of its geometry.
     * @param metadataBytes size of the encoded metadata, for reports.
     */
    public record Verified(RankMetadata metadata, PeerGeometry geometry, int metadataBytes)
    {
        /** Validates the values. */
        public Verified
        {
            requireNonNull(metadata, "metadata is null");
            requireNonNull(geometry, "geometry is null");
        }
    }

    /**
     * Verifies one payload.
     *
     * @param payloadBytes the bytes the peer served.
     * @return the checked metadata.
     * @throws KvBridgeException with {@link ErrorCode#COMPATIBILITY_MISMATCH} when the hashes differ
     *     in strict mode, {@link ErrorCode#PROTOCOL_ERROR} for anything malformed or inconsistent.
     */
    public Verified verify(byte[] payloadBytes)
    {
        HandshakePayload payload = HandshakePayload.decode(payloadBytes, limits);
        if (mode == CompatibilityMode.STRICT && !payload.compatibilityHash().equals(localHash)) {
            throw new KvBridgeException(ErrorCode.COMPATIBILITY_MISMATCH, String.format(Locale.ROOT,
                    "compatibility hash mismatch: local=%s remote=%s; the engines differ in model, dtype, cache dtype, KV heads, head size,"
                            + " layer count or HMA (local identity: %s, remote identity: %s); run both with the same model settings, or use"
                            + " compatibility mode lenient if they are known to be compatible",
                    localHash, payload.compatibilityHash(), CompatibilityHash.factorsJson(localIdentity), remoteIdentity(payload)));
        }
        byte[] metadataBytes = payload.metadata();
        RankMetadata metadata = MetadataCodec.decode(metadataBytes, limits);
        String advertisedIdentityHash = CompatibilityHash.of(metadata.geometry().model());
        if (!advertisedIdentityHash.equals(payload.compatibilityHash())) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "handshake payload field compatibility_hash=%s does not match the hash %s of the model identity the peer advertises %s"
                            + " (the peer computes its hash wrongly or altered its metadata)",
                    payload.compatibilityHash(), advertisedIdentityHash, CompatibilityHash.factorsJson(metadata.geometry().model())));
        }
        if (!advertisedIdentityHash.equals(localHash)) {
            LOG.warn("compatibility hash mismatch with engine {} accepted in lenient mode: local={} {} remote={} {}", metadata.engineId(),
                    localHash, CompatibilityHash.factorsJson(localIdentity), advertisedIdentityHash,
                    CompatibilityHash.factorsJson(metadata.geometry().model()));
        }
        PeerGeometry geometry;
        try {
            geometry = PeerGeometry.of(metadata.geometry());
        }
        catch (KvBridgeException e) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, MetadataCodec.WHAT + " field regions is invalid: " + e.getMessage()
                    + " (the peer advertised an inconsistent geometry; fix the peer's layout or allocations)", e);
        }
        return new Verified(metadata, geometry, metadataBytes.length);
    }

    /**
     * Names the identity a mismatched peer advertises, so that the refusal shows both sides. Best
     * effort, after the hash already decided: metadata that does not decode, or whose identity does
     * not hash to what the peer claims, is named as such and never quoted as the peer's.
     */
    private String remoteIdentity(HandshakePayload payload)
    {
        try {
            ModelIdentity identity = MetadataCodec.decode(payload.metadata(), limits).geometry().model();
            return CompatibilityHash.of(identity).equals(payload.compatibilityHash()) ? CompatibilityHash.factorsJson(identity)
                    : "advertised identity does not match its hash";
        }
        catch (KvBridgeException e) {
            return "unreadable metadata";
        }
    }

    /**
     * Returns this engine's compatibility hash.
     *
     * @return 64 lower-case hex characters.
     */
    public String localHash()
    {
        return localHash;
    }
}
