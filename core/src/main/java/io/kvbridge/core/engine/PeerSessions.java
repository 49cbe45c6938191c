package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.sidechannel.LogSummary;
import io.kvbridge.core.wire.NotificationSeal;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.Peer;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The notification sessions of one rank. Sessions this rank's side channel opened (a peer shook
 * hands with it) open what that peer sends: a notification is handed on only when it is sealed,
 * names a session opened for the agent the transport says sent it, carries a MAC that verifies and
 * a sequence number not seen before; everything else is dropped and counted
 * ({@code kvbridge.notifications.rejected} by reason) and summed up in one log line per interval.
 * Sessions this rank opened with its own handshakes seal what it sends to each peer.
 *
 * <p>At most {@value #MAX_SESSIONS} opened sessions are kept; a new one displaces the one used
 * least recently (first those that never carried a notification), so a flood of handshakes cannot
 * grow the table.
 *
 * <p>{@link #established} may be called on any thread; everything else on the rank's worker.
 */
final class PeerSessions
{
    static final int MAX_SESSIONS = 4_096;

    private static final Logger LOG = LoggerFactory.getLogger(PeerSessions.class);
    private static final NotificationSeal[] NONE = new NotificationSeal[0];
    private static final int MAX_STALE_SENDERS = 1024;

    /** Why a notification was dropped; {@link #tag} is the metric's {@code reason}. */
    enum Rejection
    {
        /** Not sealed at all: a peer that never shook hands, or an older release. */
        UNSEALED("unsealed"),
        /** Names a session this rank never opened (or forgot). */
        UNKNOWN_SESSION("unknown_session"),
        /** Names a session opened for another agent than the sender. */
        WRONG_SENDER("wrong_sender"),
        /** The MAC does not verify. */
        BAD_MAC("bad_mac"),
        /** A sequence number accepted before, or too far behind. */
        REPLAYED("replayed"),
        /** Authenticated, but addressed to another incarnation (epoch) of this engine, or from one of the peer's that is gone. */
        STALE_EPOCH("stale_epoch");

        final String tag;

        Rejection(String tag)
        {
            this.tag = tag;
        }
    }

    private final TransferMetrics metrics;
    private final LogSummary rejections;
    private final ConcurrentLinkedQueue<SessionKey> arriving = new ConcurrentLinkedQueue<>();

    // worker-confined
    private final Map<String, NotificationSeal[]> byAgent = new HashMap<>();
    private final Map<Long, NotificationSeal> byId = new HashMap<>();
    private final Map<Peer, NotificationSeal> sending = new HashMap<>();
    // by session id: a peer connected again under a session already used goes on with its sequence numbers
    private final Map<Long, NotificationSeal> sendingById = new HashMap<>();
    private final long[] rejected = new long[Rejection.values().length];
    // senders already logged for a stale epoch: once per peer, so a peer that keeps talking to a gone incarnation logs one line
    private final Set<String> staleSenders = new HashSet<>();
    private long uses;

    PeerSessions(String rankName, TransferMetrics metrics)
    {
        this.metrics = requireNonNull(metrics, "metrics is null");
        this.rejections = new LogSummary(LOG, requireNonNull(rankName, "rankName is null") + ": dropped notifications", Duration.ofSeconds(10));
    }

    /** A peer shook hands with this rank: its notifications open with this key from now on. Any thread. */
    void established(SessionKey key)
    {
        arriving.add(requireNonNull(key, "key is null"));
    }

    /**
     * Opens a notification from a peer.
     *
     * @param sender the agent the transport names as sender (self-declared by the peer).
     * @param message the untrusted bytes.
     * @return the notification inside, or null when it was dropped (and counted).
     */
    byte[] open(String sender, byte[] message)
    {
        adopt();
        if (!NotificationSeal.isSealed(message)) {
            return reject(Rejection.UNSEALED, sender, message.length + " bytes without a seal");
        }
        long id = NotificationSeal.sessionIdOf(message);
        NotificationSeal seal = null;
        for (NotificationSeal candidate : byAgent.getOrDefault(sender, NONE)) {
            if (candidate.sessionId() == id) {
                seal = candidate;
                break;
            }
        }
        if (seal == null) {
            NotificationSeal other = byId.get(id);
            return other == null ? reject(Rejection.UNKNOWN_SESSION, sender, "session " + Long.toHexString(id) + " was never opened here")
                    : reject(Rejection.WRONG_SENDER, sender, "session " + Long.toHexString(id) + " belongs to " + other.peerAgent());
        }
        return switch (seal.open(message)) {
            case ACCEPTED -> {
                seal.touch(++uses);
                yield Arrays.copyOfRange(message, NotificationSeal.bodyOffset(), NotificationSeal.bodyOffset() + NotificationSeal.bodyLength(message));
            }
            case BAD_MAC -> reject(Rejection.BAD_MAC, sender, "MAC of session " + Long.toHexString(id) + " does not verify");
            case REPLAYED -> reject(Rejection.REPLAYED, sender, "sequence number of session " + Long.toHexString(id) + " seen before or too old");
        };
    }

    private byte[] reject(Rejection reason, String sender, String detail)
    {
        rejected[reason.ordinal()]++;
        metrics.notificationRejected(reason);
        rejections.record(reason.tag, "from " + Messages.abbreviate(sender) + ": " + detail);
        return null;
    }

    private void adopt()
    {
        SessionKey key;
        while ((key = arriving.poll()) != null) {
            if (byId.containsKey(key.sessionId())) {
                // 64 random bits collide only by design of a forger: keep the session already known
                LOG.warn("dropped a notification session for {}: its id {} is already in use", key.clientAgent(), Long.toHexString(key.sessionId()));
                continue;
            }
            if (byId.size() >= MAX_SESSIONS) {
                forget(leastRecentlyUsed());
            }
            NotificationSeal seal = new NotificationSeal(key);
            byId.put(key.sessionId(), seal);
            NotificationSeal[] ofAgent = byAgent.getOrDefault(key.clientAgent(), NONE);
            NotificationSeal[] grown = Arrays.copyOf(ofAgent, ofAgent.length + 1);
            grown[ofAgent.length] = seal;
            byAgent.put(key.clientAgent(), grown);
        }
    }

    private NotificationSeal leastRecentlyUsed()
    {
        NotificationSeal oldest = null;
        for (NotificationSeal seal : byId.values()) {
            if (oldest == null || seal.lastUse() < oldest.lastUse()) {
                oldest = seal;
            }
        }
        return oldest;
    }

    private void forget(NotificationSeal seal)
    {
        byId.remove(seal.sessionId());
        NotificationSeal[] ofAgent = byAgent.get(seal.peerAgent());
        NotificationSeal[] kept = Arrays.stream(ofAgent).filter(other -> other != seal).toArray(NotificationSeal[]::new);
        if (kept.length == 0) {
            byAgent.remove(seal.peerAgent());
        }
        else {
            byAgent.put(seal.peerAgent(), kept);
        }
    }

    /**
     * Seals what this rank sends to a peer with the session its handshake with that peer opened. A
     * transport peer connected again under the same session (after a failed transfer dropped the
     * old one) goes on with the session's sequence numbers: starting again at zero would read as a
     * replay to the receiver, which drops it.
     */
    void bind(Peer peer, SessionKey key)
    {
        NotificationSeal seal = sendingById.get(key.sessionId());
        if (seal == null) {
            if (sendingById.size() >= MAX_SESSIONS) {
                sendingById.values().retainAll(sending.values());
            }
            seal = new NotificationSeal(key);
            sendingById.put(key.sessionId(), seal);
        }
        sending.put(peer, seal);
    }

    void unbind(Peer peer)
    {
        sending.remove(peer);
    }

    /**
     * Seals a notification for a peer.
     *
     * @throws KvBridgeException with {@link ErrorCode#HANDSHAKE_FAILED} when no session with the peer was opened.
     */
    byte[] seal(Peer peer, byte[] body)
    {
        NotificationSeal seal = sending.get(peer);
        if (seal == null) {
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, "no notification session with " + peer.name()
                    + ": only peers met through a side channel handshake can be notified");
        }
        return seal.seal(body);
    }

    /**
     * Counts a notification that names an epoch other than the one it must name, and logs it the
     * first time a sender sends one (at most {@value #MAX_STALE_SENDERS} senders are remembered).
     *
     * @param sender the transport agent that sent it.
     * @param detail which epochs it named and expected.
     */
    void staleEpoch(String sender, String detail)
    {
        rejected[Rejection.STALE_EPOCH.ordinal()]++;
        metrics.notificationRejected(Rejection.STALE_EPOCH);
        if (staleSenders.size() < MAX_STALE_SENDERS && staleSenders.add(sender)) {
            LOG.warn("dropped a notification from {}: {} (further ones from it are counted in kvbridge.notifications.rejected"
                    + " with reason=stale_epoch, not logged)", Messages.abbreviate(sender), detail);
        }
    }

    /** @return sessions that open notifications, after adopting those that arrived; worker only. */
    int opened()
    {
        adopt();
        return byId.size();
    }

    /** @return notifications dropped for a reason since the rank started; worker only. */
    long rejected(Rejection reason)
    {
        return rejected[reason.ordinal()];
    }
}
