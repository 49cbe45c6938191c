package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.MetadataCodec;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * What a side channel serves, per rank and role: the encoded payload and where the rank's
 * notification sessions go. An entry published without a role answers a request for either role;
 * a request that names no role (a client of an earlier release) is answered when its rank is
 * served under one entry only.
 */
final class ServedRanks
{
    static final Comparator<RankKey> RANK_ORDER = Comparator.comparingInt(RankKey::ppRank).thenComparingInt(RankKey::tpRank);

    /** What the server holds for one rank: its encoded payload, and where its notification sessions go (null: none). */
    record Served(byte[] payload, Consumer<SessionKey> sessions)
    {
    }

    /** @param role the role served, or null for an entry that answers either. */
    private record Key(ServedRole role, RankKey rank)
    {
    }

    private final Map<Key, Served> entries = new ConcurrentHashMap<>();

    /** Serves a rank under a role (null: either), replacing what was served there; returns the entry replaced, or null. */
    Served put(ServedRole role, RankKey rank, Served served)
    {
        return entries.put(new Key(role, requireNonNull(rank, "rank is null")), requireNonNull(served, "served is null"));
    }

    void remove(ServedRole role, RankKey rank)
    {
        entries.remove(new Key(role, requireNonNull(rank, "rank is null")));
    }

    /**
     * Finds what answers a request: the rank under the role asked for, else under no role; a request
     * naming no role gets the rank's only entry.
     *
     * @return the entry, or null when none answers (see {@link #missing}).
     */
    Served find(ServedRole role, RankKey rank)
    {
        if (role != null) {
            Served served = entries.get(new Key(role, rank));
            return served != null ? served : entries.get(new Key(null, rank));
        }
        List<Served> any = new ArrayList<>(1);
        for (Map.Entry<Key, Served> entry : entries.entrySet()) {
            if (entry.getKey().rank().equals(rank)) {
                any.add(entry.getValue());
            }
        }
        return any.size() == 1 ? any.getFirst() : null;
    }

    /** {@return why {@link #find} found nothing, for the error reply} */
    String missing(String engineId, ServedRole role, RankKey rank)
    {
        if (role == null && served(rank) > 1) {
            return "engine " + engineId + " serves both a producer and a consumer at rank " + rank + " (kv_both) and the request names neither:"
                    + " run the same kvbridge release on both engines";
        }
        return "engine " + engineId + " has no " + (role == null ? "" : role.wireName() + " ") + "rank " + rank + " (it serves " + describe() + ")";
    }

    /** {@return the ranks served under any role} */
    Set<RankKey> ranks()
    {
        Set<RankKey> ranks = new TreeSet<>(RANK_ORDER);
        for (Key key : entries.keySet()) {
            ranks.add(key.rank());
        }
        return Set.copyOf(ranks);
    }

    Set<ServedRole> roles(RankKey rank)
    {
        Set<ServedRole> roles = EnumSet.noneOf(ServedRole.class);
        for (Key key : entries.keySet()) {
            if (key.rank().equals(rank) && key.role() != null) {
                roles.add(key.role());
            }
        }
        return Set.copyOf(roles);
    }

    private int served(RankKey rank)
    {
        int count = 0;
        for (Key key : entries.keySet()) {
            count += key.rank().equals(rank) ? 1 : 0;
        }
        return count;
    }

    String describe()
    {
        List<String> served = new ArrayList<>();
        entries.keySet().stream().sorted(Comparator.comparing(Key::rank, RANK_ORDER).thenComparing(key -> key.role() == null ? "" : key.role().wireName()))
                .forEach(key -> served.add((key.role() == null ? "" : key.role().wireName() + " ") + key.rank()));
        return served.toString();
    }

    /** Encodes a rank's payload once, refusing what peers would refuse. */
    static byte[] encode(String engineId, RankMetadata rank, SideChannelSettings settings)
    {
        KvBridgeException.checkArgument(rank.engineId().equals(engineId), "rank %s carries engineId=%s but the server serves engine %s",
                rank.rank(), rank.engineId(), engineId);
        byte[] payload = HandshakePayload.of(rank).encode();
        checkWithinLimits(rank, payload, settings);
        return payload;
    }

    private static void checkWithinLimits(RankMetadata rank, byte[] payload, SideChannelSettings settings)
    {
        // peers decode with the same limits: refuse here, at start, what every peer would refuse later
        try {
            MetadataCodec.decode(HandshakePayload.decode(payload, settings.limits()).metadata(), settings.limits());
        }
        catch (KvBridgeException e) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "the metadata of rank " + rank.rank() + " would be refused by peers: "
                    + e.getMessage() + " (raise the wire limits on all engines, or advertise fewer regions)", e);
        }
    }
}
