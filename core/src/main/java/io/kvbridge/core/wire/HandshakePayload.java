package io.kvbridge.core.wire;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Arrays;
import java.util.Locale;

/**
 * The outer, two-phase payload a side channel serves for one rank: the wire version and the
 * compatibility hash, readable without understanding the metadata, and the metadata itself as
 * opaque msgpack bytes. A receiver checks version and hash first, so that a peer whose metadata
 * schema drifted fails with a clear mismatch instead of a confusing decode error.
 *
 * @param wireVersion version of the metadata format.
 * @param compatibilityHash the sender's {@link CompatibilityHash}.
 * @param metadata msgpack of the sender's {@link RankMetadata}.
 */
public record HandshakePayload(int wireVersion, String compatibilityHash, byte[] metadata)
{
    /**
     * The version this code writes. It changes only when the meaning of an existing field changes
     * or peers of different versions could not work together; adding an optional field does not
     * change it, because decoders ignore unknown keys. Version 2: notifications over the transport
     * are sealed with a session opened at the handshake, which version 1 peers neither open nor
     * send, so the two refuse each other here rather than drop each other's notifications later.
     * Version 3: metadata and every notification carry the engine's epoch, which version 2 peers
     * neither send nor check, so a version 2 peer could not tell this engine's restart.
     */
    public static final int WIRE_VERSION = 3;
    /** The oldest version this code reads. */
    public static final int MIN_WIRE_VERSION = 3;

    private static final String WHAT = "handshake payload";

    /** Validates the values and copies the bytes. */
    public HandshakePayload
    {
        requireNonNull(compatibilityHash, "compatibilityHash is null");
        metadata = requireNonNull(metadata, "metadata is null").clone();
        checkArgument(wireVersion > 0, "wireVersion=%d is not positive", wireVersion);
    }

    /**
     * Builds the payload a rank serves.
     *
     * @param metadata what the rank advertises.
     * @return the payload, with the current wire version and the hash of the rank's model identity.
     */
    public static HandshakePayload of(RankMetadata metadata)
    {
        return new HandshakePayload(WIRE_VERSION, CompatibilityHash.of(metadata.geometry().model()), MetadataCodec.encode(metadata));
    }

    /**
     * Returns the metadata bytes.
     *
     * @return a copy.
     */
    @Override
    public byte[] metadata()
    {
        return metadata.clone();
    }

    /**
     * Encodes the payload.
     *
     * @return the msgpack bytes.
     */
    public byte[] encode()
    {
        return new WireWriter().map(3)
                .string("wire_version").integer(wireVersion)
                .string("compatibility_hash").string(compatibilityHash)
                .string("metadata").binary(metadata)
                .toByteArray();
    }

    /**
     * Decodes the outer payload from untrusted bytes, without looking into the metadata.
     *
     * @param bytes the msgpack map.
     * @param limits bounds to enforce.
     * @return the payload.
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} when malformed, or when the
     *     wire version is not one this code reads.
     */
    public static HandshakePayload decode(byte[] bytes, WireLimits limits)
    {
        WireMap map = WireDecoder.decodeMap(bytes, limits, WHAT);
        int version = map.requireInt("wire_version");
        if (version < MIN_WIRE_VERSION || version > WIRE_VERSION) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "peer wire_version=%d is not supported (this engine reads %d..%d): run the same kvbridge release on both engines",
                    version, MIN_WIRE_VERSION, WIRE_VERSION));
        }
        String hash = map.requireString("compatibility_hash");
        if (!CompatibilityHash.isWellFormed(hash)) {
            throw map.error("compatibility_hash", "value=" + abbreviate(hash) + " is not 64 lower-case hex characters");
        }
        return new HandshakePayload(version, hash, map.requireBinary("metadata"));
    }

    private static String abbreviate(String value)
    {
        return value.length() <= 80 ? value : value.substring(0, 80) + "...";
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof HandshakePayload other && wireVersion == other.wireVersion && compatibilityHash.equals(other.compatibilityHash)
                && Arrays.equals(metadata, other.metadata);
    }

    @Override
    public int hashCode()
    {
        return (wireVersion * 31 + compatibilityHash.hashCode()) * 31 + Arrays.hashCode(metadata);
    }

    @Override
    public String toString()
    {
        return "HandshakePayload[wireVersion=" + wireVersion + ", compatibilityHash=" + compatibilityHash + ", metadata=" + metadata.length + " bytes]";
    }
}
