package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.RemoteEngine;
import io.kvbridge.core.sidechannel.RemoteEngines;
import io.kvbridge.core.sidechannel.ServedRole;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.PeerCapability;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A rank's side of the remote engines it works with: the handshake cache ({@link RemoteEngines}),
 * the {@link PeerLinks} to their ranks, and the notification sessions that seal what it sends them
 * and open what they send. Handshakes run on the bridge's executor; clean-ups they or a failed peer
 * cause are handed to the rank's worker, which owns the links.
 */
final class RankPeers
{
    private static final Logger LOG = LoggerFactory.getLogger(RankPeers.class);

    private final String name;
    private final EngineServices services;
    private final TransferBackend transport;
    private final PeerSessions sessions;
    private final PeerLinks links;
    private final RemoteEngines remotes;
    private final Executor worker;

    /**
     * @param wanted the role of the peers' ranks, which handshakes ask side channels for.
     * @param worker runs clean-ups on the rank's worker thread.
     */
    RankPeers(String name, EngineServices services, ConnectorSettings settings, ServedRole wanted, TransferBackend transport, PeerSessions sessions,
            Set<PeerCapability> capabilities, Executor worker)
    {
        this.name = requireNonNull(name, "name is null");
        this.services = requireNonNull(services, "services is null");
        this.transport = requireNonNull(transport, "transport is null");
        this.sessions = requireNonNull(sessions, "sessions is null");
        this.worker = requireNonNull(worker, "worker is null");
        this.links = new PeerLinks(name, transport, sessions, new PlanFactory(settings.cacheSpec()));
        HandshakeVerifier verifier = new HandshakeVerifier(settings.geometry().model(), services.sideChannelSettings().compatibility(),
                services.sideChannelSettings().limits());
        // every handshake opens a notification session with the ranks fetched: what this rank sends them is sealed with it
        this.remotes = new RemoteEngines(services.client(), verifier, capabilities, services.sideChannelSettings().engineTtl(), services.clock(),
                services.handshakes(), this::evicted, transport.agentName(), services.discovery(), wanted);
    }

    PeerLinks links()
    {
        return links;
    }

    PeerSessions sessions()
    {
        return sessions;
    }

    RemoteEngines remotes()
    {
        return remotes;
    }

    /**
     * Shakes hands through {@link RemoteEngines#handshake}, timing it when it was not answered from
     * the cache; a cached engine of another epoch than expected does not answer.
     */
    CompletableFuture<RemoteEngine> handshake(RemoteKey key, Collection<RankKey> ranks, long expectedEpoch)
    {
        // asked before: a handshake on loopback can complete before its future is looked at, so being done says nothing
        boolean answeredFromCache = remotes.answersFromCache(key.cacheKey(), ranks, expectedEpoch);
        long started = services.clock().monotonicNanos();
        CompletableFuture<RemoteEngine> future = remotes.handshake(key.cacheKey(), key.engineId(), key.socketAddress(), ranks, expectedEpoch);
        if (!answeredFromCache) {
            future.whenComplete((engine, failure) -> services.metrics().handshakeDone(services.clock().monotonicNanos() - started, failure == null));
        }
        return future;
    }

    /** Marks a link's remote engine in use by a transfer: it is not evicted until the mark is closed. */
    RemoteEngines.InFlight markInFlight(PeerLink link)
    {
        return remotes.markInFlight(link.remote().cacheKey());
    }

    /**
     * A peer of a remote engine failed: the engine's links are closed once the worker's round is
     * over, and the next handshake asks the side channel again, so that a restarted engine is met
     * with its new epoch (and its old memory registrations are never used) instead of through the
     * cached metadata of the incarnation that is gone.
     */
    void peerFailed(RemoteKey remote)
    {
        remotes.revalidate(remote.cacheKey());
        worker.execute(() -> links.close(remote));
    }

    private void evicted(RemoteEngine engine)
    {
        // the evicted (or restarted) engine's links and plans go with it
        RemoteKey key = RemoteKey.of(engine);
        worker.execute(() -> links.close(key));
    }

    /** Sends a notification without data over a link; a failure is counted and logged, never thrown. */
    boolean notifyQuietly(PeerLink link, byte[] message, String what)
    {
        try {
            transport.notify(link.peer(), link.seal(message));
            return true;
        }
        catch (RuntimeException e) {
            services.metrics().notificationFailed();
            LOG.warn("{}: could not send {} to {}: {}", name, what, link.agent(), e.getMessage());
            return false;
        }
    }
}
