package io.kvbridge.core.tools;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.wire.GeometryTable;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.MetadataCodec;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireLimits;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Asks a peer's side channel what it advertises, rank by rank, as an engine's handshake would, and
 * decodes it without a compatibility check: inspecting a peer needs no local model. What the
 * {@code kvbridge inspect} command prints.
 */
public final class PeerInspector
{
    /**
     * What one rank advertises.
     *
     * @param rank the rank, as {@code ppN:tpN}.
     * @param compatibilityHash the hash a compatible engine must share.
     * @param metadataBytes the size of the encoded rank metadata.
     * @param table the geometry as a text table.
     * @param data the geometry as JSON-ready maps and lists.
     */
    public record RankReport(String rank, String compatibilityHash, int metadataBytes, String table, Map<String, Object> data)
    {
        /** Copies the data, keeping its order (the wire's field order). */
        public RankReport
        {
            data = Collections.unmodifiableMap(new LinkedHashMap<>(data));
        }
    }

    private final SideChannelSettings settings;

    /**
     * Creates an inspector.
     *
     * @param timeout the deadline of connecting, of each read and of the whole handshake.
     * @param secret the side channel's shared secret when it authenticates; null when it does not.
     * @param tls the TLS settings when the side channel serves TLS; null for plain TCP.
     */
    public PeerInspector(Duration timeout, byte[] secret, SideChannelTls tls)
    {
        requireNonNull(timeout, "timeout is null");
        SideChannelSettings.Builder builder = SideChannelSettings.builder().handshakeTimeout(timeout).readTimeout(timeout).connectTimeout(timeout);
        if (secret != null) {
            builder.secret(secret);
        }
        if (tls != null) {
            builder.tls(tls);
        }
        this.settings = builder.build();
    }

    /**
     * Fetches and decodes ranks {@code 0..ppSize-1} by {@code 0..tpSize-1}.
     *
     * @param peer the peer's side-channel address.
     * @param ppSize pipeline stages to fetch.
     * @param tpSize tensor-parallel ranks to fetch.
     * @return one report per rank, in rank order.
     * @throws io.kvbridge.spi.KvBridgeException when the peer cannot be reached, refuses, or sends
     *     what does not decode (the message names which).
     */
    public List<RankReport> inspect(InetSocketAddress peer, int ppSize, int tpSize)
    {
        List<RankKey> ranks = new ArrayList<>();
        for (int pp = 0; pp < ppSize; pp++) {
            for (int tp = 0; tp < tpSize; tp++) {
                ranks.add(new RankKey(pp, tp));
            }
        }
        List<RankReport> reports = new ArrayList<>();
        for (SideChannelClient.Fetched fetched : new SideChannelClient(settings, SideChannelClock.system()).fetch(peer, ranks)) {
            HandshakePayload payload = HandshakePayload.decode(fetched.payload(), WireLimits.DEFAULT);
            RankMetadata metadata = MetadataCodec.decode(payload.metadata(), WireLimits.DEFAULT);
            reports.add(new RankReport(fetched.rank().toString(), payload.compatibilityHash(), payload.metadata().length,
                    GeometryTable.render(metadata), GeometryTable.toData(metadata)));
        }
        return List.copyOf(reports);
    }
}
