package io.kvbridge.spi.layout;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import java.util.Optional;

/**
 * Turns what an inference engine knows (model, layers, cache groups, memory, rank) into the
 * {@link CacheGeometry} the planner and the wire protocol use, and answers the questions only the
 * layout can answer.
 *
 * <p>Implementations are immutable and thread-safe. {@link #describe} is deterministic: the same
 * input gives an equal geometry with regions in the same order.
 */
public interface CacheLayout
{
    /**
     * Returns the layout's name, the one its factory is registered under.
     *
     * @return lowercase name such as {@code hma}.
     */
    String name();

    /**
     * Describes one rank's cache.
     *
     * @param spec the model's cache spec.
     * @param memory the memory the engine allocated for this rank's layers.
     * @param rank the rank being described; its pipeline stage selects the layers it owns.
     * @return the validated geometry.
     * @throws io.kvbridge.spi.KvBridgeException with {@code LAYOUT_UNSUPPORTED} or
     *     {@code GEOMETRY_INVALID} when the memory does not fit the spec.
     */
    CacheGeometry describe(ModelCacheSpec spec, CacheMemory memory, Rank rank);

    /**
     * Returns how many trailing blocks of a group are exchanged for a request holding
     * {@code blocks} blocks: a sliding-window group needs only the blocks covering its window.
     *
     * <p>The consumer connector calls it for every group when a request's blocks are handed over
     * (the engine gives each group's blocks positionally and does not clip them itself), with its
     * logical block tokens, and exchanges each group's last that many blocks, in pull and in the
     * push registration. The producer end-trims its own list to the consumer's count, as for a
     * prefix-cache hit, so one side decides and both agree on the count. Blocks left out are never
     * written and are not reported invalid when a receive fails.
     *
     * <p>The default is {@link SlidingWindow#exchangedBlocks}: a sliding-window group keeps
     * {@code ceil(window / blockTokens) + 1} blocks, every other group all of them.
     *
     * @param group the cache group.
     * @param blockTokens tokens per block.
     * @param blocks blocks the request holds in that group.
     * @return the number of trailing blocks to exchange, at most {@code blocks}.
     */
    default int exchangedBlocks(CacheGroup group, int blockTokens, int blocks)
    {
        return SlidingWindow.exchangedBlocks(group, blockTokens, blocks);
    }

    /**
     * Tells whether regions of this layout's geometries may share bytes (for example a layout that
     * describes one tensor both as a whole and by parts). Layouts that never overlap regions keep the
     * default, and the conformance suite then checks that no two descriptors share a byte.
     *
     * @return true when overlapping regions are intended; false by default.
     */
    default boolean regionsMayOverlap()
    {
        return false;
    }

    /**
     * Says why a peer's geometry cannot be paired with a local one, as far as the layout knows.
     *
     * <p>A connector calls it at the handshake, with its own geometry as {@code local}, for every
     * peer rank it would exchange with (a consumer for each producer rank it addresses, a push
     * producer for the consumer rank it writes), before any descriptor list of the peer is
     * prepared or anything posted; a reason fails the request with {@code GEOMETRY_INCOMPATIBLE},
     * the reason quoted after both ranks and layouts. The reason should name both sides' values
     * and the fix.
     *
     * @param local this rank's geometry.
     * @param peer the peer rank's geometry.
     * @return a reason naming the values on both sides, or empty when the layout sees no problem.
     */
    default Optional<String> incompatibility(CacheGeometry local, CacheGeometry peer)
    {
        return Optional.empty();
    }
}
