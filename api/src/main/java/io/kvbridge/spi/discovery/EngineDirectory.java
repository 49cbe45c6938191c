package io.kvbridge.spi.discovery;

import java.util.List;
import java.util.function.Consumer;

/**
 * Where engines publish each rank's entry and consumers find them. Entries published here live
 * under a lease the directory keeps alive until they are withdrawn or the directory is closed; a
 * publisher that dies stops renewing it and its entries vanish when the lease expires. Resolving
 * and watching keep a cache, so that a store that is briefly unreachable is answered from it (and
 * {@link #health()} says so). Thread safe.
 */
public interface EngineDirectory
        extends AutoCloseable
{
    /**
     * Publishes a rank's entry, replacing the one this directory published for the same rank. A
     * store that cannot be reached does not fail the call: the entry is kept and put once the store
     * answers, and {@link #health()} says it is unreachable meanwhile.
     *
     * @param entry the entry.
     * @return the publication; closing it withdraws the entry.
     * @throws io.kvbridge.spi.KvBridgeException with {@code PROTOCOL_ERROR} when the value exceeds
     *     {@link DirectoryConfig#maxEntryBytes}, {@code CLOSED} after {@link #close()}.
     */
    Publication publish(DirectoryEntry entry);

    /**
     * Returns an engine's entries: from the cache when a watch or an earlier call filled it, else
     * read from the store within the request timeout (and cached from then on).
     *
     * @param engineId the engine.
     * @return its entries, ordered by {@code (ppRank, tpRank)}; empty when it published none.
     * @throws io.kvbridge.spi.KvBridgeException with {@code DISCOVERY_UNAVAILABLE} when nothing is
     *     cached and the store cannot be reached, {@code PROTOCOL_ERROR} when the store holds
     *     malformed keys or oversized values for the engine, {@code CLOSED} after {@link #close()}.
     */
    List<DirectoryEntry> resolve(String engineId);

    /**
     * Watches an engine's entries: the listener receives the complete list after every change (an
     * empty list when the engine's entries vanished). The cache follows the watch, so that
     * {@link #resolve} answers without a round trip while it runs.
     *
     * @param engineId the engine.
     * @param listener called on the directory's thread with the engine's entries; must not block.
     * @return the subscription; closing it stops the calls.
     */
    Subscription watch(String engineId, Consumer<List<DirectoryEntry>> listener);

    /** {@return how the directory fares} */
    DirectoryHealth health();

    /** Withdraws everything this directory published, revokes its lease and releases the connections; later calls do nothing. */
    @Override
    void close();

    /** One entry published; closing it withdraws the entry. */
    interface Publication
            extends AutoCloseable
    {
        /** Withdraws the entry (best effort: when the store is unreachable, the lease removes it later); later calls do nothing. */
        @Override
        void close();
    }

    /** One running watch of an engine. */
    interface Subscription
            extends AutoCloseable
    {
        /** Stops the watch; later calls do nothing. */
        @Override
        void close();
    }
}
