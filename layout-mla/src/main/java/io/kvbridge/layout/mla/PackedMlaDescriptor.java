package io.kvbridge.layout.mla;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Byte layout of MLA caches. An MLA layer stores one latent vector per token (the same on every
 * tensor-parallel rank), so a page is {@code blockTokens x latentWidth x elementBytes} bytes and is
 * never cut into head slices.
 *
 * <p>Packed (block-outermost) MLA stores the pages of all layers of one block side by side in a
 * row; rows follow each other with one shared stride, and the whole row of block {@code b} moves as
 * one descriptor:
 *
 * <pre>
 *   allocation base
 *   |&lt;------------------------ row 0 (stride) ------------------------&gt;|&lt;---- row 1 ---- ...
 *   +----------------+----------------+----------------+----------------+----------------+--
 *   | layer 0 page   | layer 1 page   | layer 2 page   | layer 3 page   | layer 0 page   |
 *   | block 0        | block 0        | block 0        | block 0        | block 1        |
 *   +----------------+----------------+----------------+----------------+----------------+--
 *   ^ offset 0       ^ offset p       ^ offset 2p      ^ offset 3p      ^ stride = 4p
 *
 *   one page: | token 0 latent | token 1 latent | ... | token N-1 latent |
 * </pre>
 *
 * <p>Layer {@code k}'s page of block {@code b} lies at {@code base + b x stride + offset(k)}, where
 * {@code offset(k)} is the sum of the pages before it.
 */
public final class PackedMlaDescriptor
{
    /** Wording every error about views that cannot be packed carries, so callers can match it. */
    public static final String SHARED_WHOLE_BLOCK_VIEWS = "packed MLA needs shared whole-block cache views";

    private PackedMlaDescriptor()
    {
    }

    /**
     * Several layers' pages inside rows of one stride: the bytes {@code [start + b x stride, + bytes)}
     * hold every member's page of block {@code b}.
     *
     * @param start address of the first member page of block 0.
     * @param bytes length of the covered part of a row.
     * @param stride bytes between rows.
     * @param blocks number of rows.
     */
    public record Row(long start, long bytes, long stride, int blocks)
    {
    }

    /**
     * Returns the bytes of one MLA page.
     *
     * @param blockTokens tokens per block.
     * @param latentWidth elements of the latent vector (rope part included).
     * @param elementBytes bytes per element.
     * @return {@code blockTokens x latentWidth x elementBytes}.
     */
    public static long pageBytes(int blockTokens, int latentWidth, int elementBytes)
    {
        checkArgument(blockTokens > 0 && latentWidth > 0 && elementBytes > 0,
                "blockTokens=%d, latentWidth=%d and elementBytes=%d must all be positive", blockTokens, latentWidth, elementBytes);
        return (long) blockTokens * latentWidth * elementBytes;
    }

    /**
     * Returns the offset of a member's page inside a packed row.
     *
     * @param pages page bytes of every member, in row order.
     * @param member index of the member.
     * @return the sum of the pages before it.
     */
    public static long memberOffset(long[] pages, int member)
    {
        requireNonNull(pages, "pages is null");
        checkArgument(member >= 0 && member < pages.length, "member=%d is outside [0, %d)", member, pages.length);
        long offset = 0;
        for (int k = 0; k < member; k++) {
            offset = Math.addExact(offset, pages[k]);
        }
        return offset;
    }

    /**
     * Returns the bytes of a packed row.
     *
     * @param pages page bytes of every member.
     * @return the sum of all pages.
     */
    public static long rowBytes(long[] pages)
    {
        return pages.length == 0 ? 0 : Math.addExact(memberOffset(pages, pages.length - 1), pages[pages.length - 1]);
    }

    /**
     * Returns the address of a member's page of one block.
     *
     * @param base address of row 0.
     * @param block block index.
     * @param stride bytes between rows.
     * @param memberOffset see {@link #memberOffset(long[], int)}.
     * @return {@code base + block x stride + memberOffset}.
     */
    public static long memberAddress(long base, int block, long stride, long memberOffset)
    {
        return base + block * stride + memberOffset;
    }

    /**
     * Finds the row that distinct views interleaved in one allocation share: every view has the same
     * stride and block count, all pages of a block fit in one stride, and together they cover one
     * gap-free range (so a descriptor of the row carries no byte of any other block).
     *
     * @param views distinct views (no two at one address).
     * @return the row, or empty when the views do not share one.
     */
    public static Optional<Row> sharedRow(List<LayerView> views)
    {
        requireNonNull(views, "views is null");
        if (views.isEmpty()) {
            return Optional.empty();
        }
        List<LayerView> sorted = new ArrayList<>(views);
        sorted.sort(Comparator.comparingLong(LayerView::address));
        LayerView first = sorted.getFirst();
        long covered = first.address();
        for (LayerView view : sorted) {
            if (view.blockStride() != first.blockStride() || view.blocks() != first.blocks() || view.address() > covered) {
                return Optional.empty();
            }
            covered = Math.max(covered, view.address() + view.blockBytes());
        }
        long bytes = covered - first.address();
        return bytes <= first.blockStride() ? Optional.of(new Row(first.address(), bytes, first.blockStride(), first.blocks())) : Optional.empty();
    }

    /**
     * Checks that views can be packed: they all lie in one allocation that is nothing but their
     * rows ({@code blocks x stride == allocation bytes}) and share one gap-free row.
     *
     * @param homes the allocation of each view, in the same order.
     * @param views distinct views.
     * @return the shared row.
     * @throws KvBridgeException {@code LAYOUT_UNSUPPORTED} saying which condition fails; nothing
     *     may be registered then.
     */
    public static Row checkWholeBlockViews(List<Allocation> homes, List<LayerView> views)
    {
        requireNonNull(homes, "homes is null");
        requireNonNull(views, "views is null");
        checkArgument(homes.size() == views.size() && !views.isEmpty(), "homes=%d and views=%d must be as many and not empty", homes.size(), views.size());
        Allocation home = homes.getFirst();
        for (int i = 1; i < views.size(); i++) {
            fail(homes.get(i).equals(home), "layer %s lies in allocation %s but layer %s in %s; give all packed layers one allocation",
                    views.getFirst().layer(), home, views.get(i).layer(), homes.get(i));
        }
        for (LayerView view : views) {
            fail(view.blockStride() == views.getFirst().blockStride() && view.blocks() == views.getFirst().blocks(),
                    "layer %s has blockStride=%d, blocks=%d but layer %s has blockStride=%d, blocks=%d; packed layers share one stride and block count",
                    view.layer(), view.blockStride(), view.blocks(), views.getFirst().layer(), views.getFirst().blockStride(), views.getFirst().blocks());
        }
        Row row = sharedRow(views).orElse(null);
        fail(row != null, "the layers' pages %s do not fill one gap-free part of a %d-byte row", pagesOf(views, home), views.getFirst().blockStride());
        fail(row.start() == home.address() && Math.multiplyExact((long) row.blocks(), row.stride()) == home.bytes(),
                "the rows start at 0x%x and take blocks=%d x stride=%d bytes, but allocation %s holds bytes=%d from 0x%x; "
                        + "the allocation must be exactly the packed rows (whole blocks, block-outermost)",
                row.start(), row.blocks(), row.stride(), home, home.bytes(), home.address());
        return row;
    }

    private static List<String> pagesOf(List<LayerView> views, Allocation home)
    {
        List<String> pages = new ArrayList<>();
        for (LayerView view : views) {
            pages.add(view.layer() + "@+" + (view.address() - home.address()) + "/" + view.blockBytes());
        }
        return pages;
    }

    private static void fail(boolean condition, String format, Object... args)
    {
        if (!condition) {
            throw new KvBridgeException(ErrorCode.LAYOUT_UNSUPPORTED, SHARED_WHOLE_BLOCK_VIEWS + ": " + String.format(Locale.ROOT, format, args));
        }
    }
}
