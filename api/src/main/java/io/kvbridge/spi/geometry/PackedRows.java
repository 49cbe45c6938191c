package io.kvbridge.spi.geometry;

import static java.util.Objects.requireNonNull;

import java.util.Locale;
import java.util.Optional;

/**
 * Whether a packed row (a region whose blocks hold several layers' pages side by side, as packed
 * MLA caches advertise them with {@link Region#packedMembers()}) may move as one whole block onto a
 * peer's region. One descriptor per row is the cheapest transfer, but it is exact only when the
 * peer's row means the same bytes:
 *
 * <pre>
 *   local row   [ L0 @ 0 | L1 @ 128 ]  stride 256, blocks of 16 tokens, 1 kernel block each
 *   remote row  [ L0 @ 0 | L1 @ 128 ]  stride 256, blocks of 16 tokens, 1 kernel block each   moves whole
 *   remote row  [ L0 @ 0 | L1 @ 256 ]  stride 384                                             layer by layer
 * </pre>
 *
 * A row moves whole only onto a row with the same block bytes, stride and member pages (layer,
 * offset, page bytes, in order), between geometries with the same block tokens and kernel blocks
 * per scheduler block (a row cannot be cut into sub-blocks: its layers would interleave). Any other
 * pairing involving a packed row is made layer by layer, each row narrowed to the layer's page.
 * Routing chooses layer-by-layer pairing where this says no, and the planner refuses a whole-row
 * entry this refuses.
 */
public final class PackedRows
{
    private PackedRows()
    {
    }

    /**
     * Returns why a region cannot move as one whole block onto a peer's region, or nothing when it
     * can (or when neither region is packed, which this rule does not govern).
     *
     * @param local the geometry holding {@code mine}.
     * @param mine the local region.
     * @param remote the geometry holding {@code theirs}.
     * @param theirs the peer's region.
     * @return empty when the pair may move whole; otherwise a message naming both sides' block
     *     bytes, strides, block tokens, kernel blocks per scheduler block and member pages.
     */
    public static Optional<String> wholeRowMismatch(CacheGeometry local, Region mine, CacheGeometry remote, Region theirs)
    {
        requireNonNull(local, "local is null");
        requireNonNull(mine, "mine is null");
        requireNonNull(remote, "remote is null");
        requireNonNull(theirs, "theirs is null");
        if (!mine.packed() && !theirs.packed()) {
            return Optional.empty();
        }
        if (mine.blockBytes() == theirs.blockBytes() && mine.stride() == theirs.stride() && mine.packedMembers().equals(theirs.packedMembers())
                && local.blockTokens() == remote.blockTokens() && local.kernelBlocksPerLogical() == remote.kernelBlocksPerLogical()) {
            return Optional.empty();
        }
        return Optional.of(String.format(Locale.ROOT, "packed region %s needs identical block geometry on both sides to move as one whole row, but local has blockBytes=%d "
                        + "stride=%d blockTokens=%d kernelBlocksPerLogical=%d members=%s and remote region %s has blockBytes=%d stride=%d blockTokens=%d "
                        + "kernelBlocksPerLogical=%d members=%s", mine.name(), mine.blockBytes(), mine.stride(), local.blockTokens(),
                local.kernelBlocksPerLogical(), mine.packedMembers(), theirs.name(), theirs.blockBytes(), theirs.stride(), remote.blockTokens(),
                remote.kernelBlocksPerLogical(), theirs.packedMembers()));
    }

    /**
     * Tells whether a region may move as one whole block onto a peer's region.
     *
     * @param local the geometry holding {@code mine}.
     * @param mine the local region.
     * @param remote the geometry holding {@code theirs}.
     * @param theirs the peer's region.
     * @return true when {@link #wholeRowMismatch} finds nothing.
     */
    public static boolean movesWhole(CacheGeometry local, Region mine, CacheGeometry remote, Region theirs)
    {
        return wholeRowMismatch(local, mine, remote, theirs).isEmpty();
    }
}
