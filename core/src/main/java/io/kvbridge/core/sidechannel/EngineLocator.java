package io.kvbridge.core.sidechannel;

import java.net.InetSocketAddress;
import java.util.Collection;
import java.util.Optional;

/**
 * Finds the side channel that serves some ranks of an engine by the engine's id, as a discovery
 * directory does; {@link RemoteEngines} asks it before each handshake and falls back to the
 * address it was given when it finds nothing, and when the handshake at the address it found fails.
 * What it finds is a hint: the handshake still checks the engine id, and the side channel's own
 * authentication (a shared secret) proves the rest. Called on the handshake executor: it may block,
 * within its own deadlines.
 */
public interface EngineLocator
{
    /** Finds nothing: every handshake goes to the address it was given. */
    EngineLocator NONE = (engineId, ranks, given) -> Optional.empty();

    /**
     * Finds the side channel serving every rank asked for.
     *
     * @param engineId the engine.
     * @param ranks the ranks a handshake needs.
     * @param given the address the caller was given (the router's parameters), the fallback.
     * @return the one side channel serving them all, resolved; empty when the locator knows none it may use.
     */
    Optional<InetSocketAddress> locate(String engineId, Collection<RankKey> ranks, InetSocketAddress given);

    /**
     * Hears that a handshake at an address this locator found failed, before the caller falls back
     * to the address it was given.
     *
     * @param engineId the engine.
     * @param located the address found.
     * @param reason why the handshake failed.
     */
    default void failed(String engineId, InetSocketAddress located, String reason)
    {
    }
}
