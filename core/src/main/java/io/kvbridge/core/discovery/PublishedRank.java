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
 * What one rank publishes in the directory: a msgpack map of {@code format} (1), {@code host} and
 * {@code port} of its side channel, and {@code payload}, the handshake payload its side channel
 * serves for the rank (wire version, compatibility hash, encoded {@link RankMetadata}).
 *
 * @param sideChannel the rank's side channel, unresolved.
 * @param metadata the rank's metadata, decoded from the payload.
 */
public record PublishedRank(InetSocketAddress sideChannel, RankMetadata metadata)
{
    /** The envelope's version. */
    public static final int FORMAT = 1;

    private static final String WHAT = "discovery entry";

    /** Validates the values. */
    public PublishedRank
    {
        requireNonNull(sideChannel, "sideChannel is null");
        requireNonNull(metadata, "metadata is null");
    }

    /**
     * Builds a rank's entry.
     *
     * @param host the host peers reach the side channel at.
     * @param port the side channel's port.
     * @param metadata what the rank advertises.
     * @return the entry.
     */
    public static DirectoryEntry entry(String host, int port, RankMetadata metadata)
    {
        byte[] value = new WireWriter().map(4)
                .string("format").integer(FORMAT)
                .string("host").string(host)
                .string("port").integer(port)
                .string("payload").binary(HandshakePayload.of(metadata).encode())
                .toByteArray();
        return new DirectoryEntry(metadata.engineId(), metadata.rank().ppRank(), metadata.rank().tpRank(), value);
    }

    /**
     * Decodes an entry read from a directory with the checks a side-channel reply gets: bounded
     * msgpack, a wire version this code reads, a well-formed compatibility hash that matches the
     * advertised model identity, every record re-validated, the untrusted-geometry rules, and an
     * engine id and rank equal to those of the key the entry was found under.
     *
     * @param entry the entry as read.
     * @param limits bounds every decoder enforces.
     * @return the rank's side channel and metadata.
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} naming the engine, the rank and the problem.
     */
    public static PublishedRank decode(DirectoryEntry entry, WireLimits limits)
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
            HandshakePayload payload = HandshakePayload.decode(map.requireBinary("payload"), limits);
            RankMetadata metadata = MetadataCodec.decode(payload.metadata(), limits);
            if (!CompatibilityHash.of(metadata.geometry().model()).equals(payload.compatibilityHash())) {
                throw map.error("payload", "carries a compatibility hash that does not match its model identity");
            }
            PeerGeometry.of(metadata.geometry());
            if (!metadata.engineId().equals(entry.engineId()) || !key.matches(metadata.rank())) {
                throw map.error("payload", "describes engine " + metadata.engineId() + " rank " + RankKey.of(metadata.rank())
                        + ", not the engine and rank of its key");
            }
            return new PublishedRank(InetSocketAddress.createUnresolved(host, port), metadata);
        }
        catch (KvBridgeException e) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "the discovery entry of engine %s rank %s is refused: %s (a foreign writer, or an engine of another release)",
                    entry.engineId(), key, e.getMessage()), e);
        }
    }
}
