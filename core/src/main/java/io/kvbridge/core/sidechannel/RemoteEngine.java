package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.wire.HandshakeVerifier.Verified;
import io.kvbridge.core.wire.PeerCapability;
import io.kvbridge.core.wire.PeerGeometry;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.Set;

/**
 * What a handshake learned about one remote engine: the checked metadata of each rank fetched, the
 * capabilities both engines share, and the best clock offset estimate.
 *
 * @param engineId the remote engine's id.
 * @param address its side channel.
 * @param ranks the verified metadata of each rank fetched.
 * @param capabilities the capabilities both engines share.
 * @param clockOffset the remote monotonic clock minus ours, from the round trip with the smallest delay.
 * @param sessions the notification session opened with each rank fetched, when sessions were asked for.
 * @param servedAt where the side channel answered: {@code address}, or what a discovery directory
 *     located for the engine instead, which is what messages about the engine should name.
 */
public record RemoteEngine(String engineId, InetSocketAddress address, Map<RankKey, Verified> ranks, Set<PeerCapability> capabilities,
        ClockOffset clockOffset, Map<RankKey, SessionKey> sessions, InetSocketAddress servedAt)
{
    /** Validates the values and copies the collections. */
    public RemoteEngine
    {
        requireNonNull(engineId, "engineId is null");
        requireNonNull(address, "address is null");
        requireNonNull(servedAt, "servedAt is null");
        requireNonNull(clockOffset, "clockOffset is null");
        ranks = Map.copyOf(requireNonNull(ranks, "ranks is null"));
        capabilities = Set.copyOf(requireNonNull(capabilities, "capabilities is null"));
        sessions = Map.copyOf(requireNonNull(sessions, "sessions is null"));
    }

    /**
     * An engine that answered at the address it was asked at.
     *
     * @param engineId the engine's id.
     * @param address its side channel.
     * @param ranks the verified metadata of each rank fetched.
     * @param capabilities what the engine offers.
     * @param clockOffset its clock against this one's.
     * @param sessions the notification session opened with each rank fetched.
     */
    public RemoteEngine(String engineId, InetSocketAddress address, Map<RankKey, Verified> ranks, Set<PeerCapability> capabilities,
            ClockOffset clockOffset, Map<RankKey, SessionKey> sessions)
    {
        this(engineId, address, ranks, capabilities, clockOffset, sessions, address);
    }

    /**
     * An engine fetched without notification sessions.
     *
     * @param engineId the engine's id.
     * @param address its side channel.
     * @param ranks the verified metadata of each rank fetched.
     * @param capabilities what the engine offers.
     * @param clockOffset its clock against this one's.
     */
    public RemoteEngine(String engineId, InetSocketAddress address, Map<RankKey, Verified> ranks, Set<PeerCapability> capabilities,
            ClockOffset clockOffset)
    {
        this(engineId, address, ranks, capabilities, clockOffset, Map.of());
    }

    /**
     * Returns the notification session opened with a rank: the key this engine's notifications to
     * that rank are sealed with.
     *
     * @param rank the rank.
     * @return the session's key.
     * @throws KvBridgeException with {@link ErrorCode#HANDSHAKE_FAILED} when none was opened.
     */
    public SessionKey session(RankKey rank)
    {
        SessionKey session = sessions.get(rank);
        if (session == null) {
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, "rank " + rank + " of engine " + engineId + " at " + address
                    + " opened no notification session (sessions: " + sessions.keySet() + "); notifications to it could not be authenticated");
        }
        return session;
    }

    /**
     * Returns the epoch of the remote process that answered: every rank fetched carries it (the
     * handshake checks they agree).
     *
     * @return the epoch; {@link RankMetadata#UNKNOWN_EPOCH} when no rank was fetched.
     */
    public long epoch()
    {
        for (Verified verified : ranks.values()) {
            return verified.metadata().epoch();
        }
        return RankMetadata.UNKNOWN_EPOCH;
    }

    /**
     * Returns a rank's metadata.
     *
     * @param rank the rank.
     * @return its metadata.
     * @throws KvBridgeException with {@link ErrorCode#PEER_UNKNOWN} when the rank was not fetched.
     */
    public RankMetadata metadata(RankKey rank)
    {
        return verified(rank).metadata();
    }

    /**
     * Returns the checked view of a rank's geometry.
     *
     * @param rank the rank.
     * @return the view.
     * @throws KvBridgeException with {@link ErrorCode#PEER_UNKNOWN} when the rank was not fetched.
     */
    public PeerGeometry geometry(RankKey rank)
    {
        return verified(rank).geometry();
    }

    private Verified verified(RankKey rank)
    {
        Verified verified = ranks.get(rank);
        if (verified == null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "rank " + rank + " of engine " + engineId + " was not fetched (fetched: "
                    + ranks.keySet() + "); include it in the handshake");
        }
        return verified;
    }
}
