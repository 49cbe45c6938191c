package io.kvbridge.core.sidechannel;

import java.net.InetSocketAddress;
import java.util.Collection;
import java.util.Optional;

/**
 * Finds the side channel that serves some ranks of an engine by the engine's id, as a discovery
 * directory does; {@link RemoteEngines} asks it before each handshake and falls back to the
 * address it was given when it finds nothing. Called on the handshake executor: it may block, within
 * its own deadlines.
 */
@FunctionalInterface
public interface EngineLocator
{
    /** Finds nothing: every handshake goes to the address it was given. */
    EngineLocator NONE = (engineId, ranks) -> Optional.empty();

    /**
     * Finds the side channel serving every rank asked for.
     *
     * @param engineId the engine.
     * @param ranks the ranks a handshake needs.
     * @return the one side channel serving them all, resolved; empty when the locator knows none.
     */
    Optional<InetSocketAddress> locate(String engineId, Collection<RankKey> ranks);
}
