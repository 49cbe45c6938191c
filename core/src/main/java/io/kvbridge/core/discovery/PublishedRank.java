package io.kvbridge.core.discovery;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.wire.CompatibilityHash;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.MetadataCodec;
import io.kvbridge.core.wire.PeerGeometry;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireDecoder;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.core.wire.WireMap;
import io.kvbridge.core.wire.WireWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.discovery.DirectoryEntry;
import java.net.InetSocketAddress;
import java.util.Locale;

/**
 * What one rank publishes in the directory: a msgpack map of {@code format} (2), {@code host} and
 * {@code port} of its side channel, {@code payload}, the handshake payload its side channel serves
 * for the rank (wire version, compatibility hash, encoded {@link RankMetadata}), and {@code mac},
 * the {@link EntrySigner} MAC of them all under the deployment's shared secret (empty without one).
 *
 * @param sideChannel the rank's side channel, unresolved.
 * @param metadata the rank's metadata, decoded from the payload.
 * @param authenticated whether its MAC proved it was written by an engine holding the shared secret;
 *     false when read without a secret, when nothing can be proven.
 */
public record PublishedRank(InetSocketAddress sideChannel, RankMetadata metadata, boolean authenticated)
{
    /** The envelope's version. */
    public static final int FORMAT = 2;

    private static final String WHAT = "discovery entry";

    /** Validates the values. */
    public PublishedRank
    {
        requireNonNull(sideChannel, "sideChannel is null");
        requireNonNull(metadata, "metadata is null");
    }

    /**
     * Builds a rank's entry, unsigned.
     *
     * @param host the host peers reach the side channel at.
     * @param port the side channel's port.
     * @param metadata what the rank advertises.
     * @return the entry.
     */
    public static DirectoryEntry entry(String host, int port, RankMetadata metadata)
    {
        return entry(host, port, metadata, null);
    }

    /**
     * Builds a rank's entry.
     *
     * @param host the host peers reach the side channel at.
     * @param port the side channel's port.
     * @param metadata what the rank advertises.
     * @param signer signs it with the shared secret; null for none.
     * @return the entry.
     */
    public static DirectoryEntry entry(String host, int port, RankMetadata metadata, EntrySigner signer)
    {
        byte[] payload = HandshakePayload.of(metadata).encode();
        int ppRank = metadata.rank().ppRank();
        int tpRank = metadata.rank().tpRank();
        byte[] mac = signer == null ? new byte[0] : signer.sign(metadata.engineId(), ppRank, tpRank, host, port, payload);
        byte[] value = new WireWriter().map(5)
                .string("format").integer(FORMAT)
                .string("host").string(host)
                .string("port").integer(port)
                .string("payload").binary(payload)
                .string("mac").binary(mac)
                .toByteArray();
        return new DirectoryEntry(metadata.engineId(), ppRank, tpRank, value);
    }

    /**
     * Decodes an entry without checking its MAC, as {@link #decode(DirectoryEntry, WireLimits, EntrySigner)} does without a signer.
     *
     * @param entry the entry as read.
     * @param limits bounds every decoder enforces.
     * @return the rank's side channel and metadata, not authenticated.
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} naming the engine, the rank and the problem.
     */
    public static PublishedRank decode(DirectoryEntry entry, WireLimits limits)
    {
        return decode(entry, limits, null);
    }

    /**
     * Decodes an entry read from a directory with the checks a side-channel reply gets: bounded
     * msgpack, a wire version this code reads, a well-formed compatibility hash that matches the
     * advertised model identity, every record re-validated, the untrusted-geometry rules, and an
     * engine id and rank equal to those of the key the entry was found under; with a signer, also
     * its MAC.
     *
     * @param entry the entry as read.
     * @param limits bounds every decoder enforces.
     * @param signer the deployment's signer: the entry must carry its MAC; null to read it unauthenticated.
     * @return the rank's side channel and metadata.
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} naming the engine, the rank and the problem.
     */
    public static PublishedRank decode(DirectoryEntry entry, WireLimits limits, EntrySigner signer)
    {
        RankKey key = new RankKey(entry.ppRank(), entry.tpRank());
        try {
            byte[] value = entry.value();
            if (value.length > limits.maxFrameBytes()) {
                throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT, "%d bytes exceed maxFrameBytes=%d", value.length,
                        limits.maxFrameBytes()));
            }
            WireMap map = WireDecoder.decodeMap(value, limits, WHAT);
            int format = map.requireInt("format");
            if (format != FORMAT) {
                throw map.error("format", "=" + format + " is not " + FORMAT + " (run the same kvbridge release on both engines)");
            }
            String host = map.requireString("host");
            if (host.isEmpty() || host.chars().anyMatch(c -> c <= ' ' || c == '/' || c == '@')) {
                throw map.error("host", "is not a host name or address");
            }
            int port = map.requireInt("port");
            if (port < 1 || port > 65_535) {
                throw map.error("port", "=" + port + " is outside 1..65535");
            }
            byte[] encoded = map.requireBinary("payload");
            if (signer != null && !signer.verifies(map.requireBinary("mac"), entry.engineId(), entry.ppRank(), entry.tpRank(), host, port, encoded)) {
                throw map.error("mac", "does not authenticate the entry with this deployment's shared secret");
            }
            HandshakePayload payload = HandshakePayload.decode(encoded, limits);
            RankMetadata metadata = MetadataCodec.decode(payload.metadata(), limits);
            if (!CompatibilityHash.of(metadata.geometry().model()).equals(payload.compatibilityHash())) {
                throw map.error("payload", "carries a compatibility hash that does not match its model identity");
            }
            PeerGeometry.of(metadata.geometry());
            if (!metadata.engineId().equals(entry.engineId()) || !key.matches(metadata.rank())) {
                throw map.error("payload", "describes engine " + metadata.engineId() + " rank " + RankKey.of(metadata.rank())
                        + ", not the engine and rank of its key");
            }
            return new PublishedRank(InetSocketAddress.createUnresolved(host, port), metadata, signer != null);
        }
        catch (KvBridgeException e) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "the discovery entry of engine %s rank %s is refused: %s (a foreign writer, or an engine of another release)",
                    entry.engineId(), key, e.getMessage()), e);
        }
    }
}
