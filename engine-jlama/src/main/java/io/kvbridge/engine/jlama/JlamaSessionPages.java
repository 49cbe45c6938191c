package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.util.Locale;

/**
 * The pages of one Jlama session, made to exist up front and located. Jlama maps a page on first
 * use; a page that kvbridge registers must exist before the first transfer and keep its address, so
 * every page of the session is touched here once, through Jlama's own accessors, and its base address
 * read back from the tensor Jlama returns. Each address is checked against the paging that
 * {@link JlamaPageGeometry} predicts, so a Jlama whose layout differs fails here and not in flight.
 */
public final class JlamaSessionPages
{
    private final JlamaPageGeometry geometry;
    private final long[][] pageAddresses;

    private JlamaSessionPages(JlamaPageGeometry geometry, long[][] pageAddresses)
    {
        this.geometry = geometry;
        this.pageAddresses = pageAddresses;
    }

    /**
     * Maps every page of a session and reads back their addresses.
     *
     * @param buffer the session's KV buffer.
     * @param geometry the paging Jlama uses for it.
     * @return the located pages.
     * @throws KvBridgeException {@code LAYOUT_UNSUPPORTED} when Jlama's addresses do not follow the paging.
     */
    public static JlamaSessionPages map(KvBufferCache.KvBuffer buffer, JlamaPageGeometry geometry)
    {
        long[][] addresses = new long[geometry.layerPages()][geometry.contextPages()];
        for (int lp = 0; lp < geometry.layerPages(); lp++) {
            for (int cp = 0; cp < geometry.contextPages(); cp++) {
                int layer = lp * geometry.layersPerPage();
                int token = cp * geometry.tokensPerPage();
                long base = address(buffer.getKeyTensorForPosition(layer, token));
                addresses[lp][cp] = base;
                // the far corner of the page: the last token's value row of the page's last layer that exists
                int lastLayer = Math.min(geometry.layers(), layer + geometry.layersPerPage()) - 1;
                int lastToken = token + geometry.tokensPerPage() - 1;
                long expected = base + geometry.planeOffset(lastLayer, true) + (geometry.tokensPerPage() - 1L) * geometry.rowBytes();
                long actual = address(buffer.getValTensorForPosition(lastLayer, lastToken));
                KvBridgeException.check(actual == expected, ErrorCode.LAYOUT_UNSUPPORTED, String.format(Locale.ROOT,
                        "Jlama page L%dC%d: value row of layer %d token %d is at 0x%x but the paging %s puts it at 0x%x; "
                                + "this Jlama pages its cache differently from the version the layout was written for",
                        lp, cp, lastLayer, lastToken, actual, geometry, expected));
            }
        }
        return new JlamaSessionPages(geometry, addresses);
    }

    static long address(AbstractTensor<?, ?> tensor)
    {
        KvBridgeException.check(tensor.getMemorySegment().isNative(), ErrorCode.MEMORY_KIND_UNSUPPORTED,
                "Jlama KV page is on the Java heap; load the model with a working directory so that pages are mapped files");
        return tensor.getMemorySegment().address() + (long) tensor.getMemorySegmentOffset(0);
    }

    /**
     * Returns the paging.
     *
     * @return the geometry.
     */
    public JlamaPageGeometry geometry()
    {
        return geometry;
    }

    /**
     * Returns the address of one page.
     *
     * @param layerPage index along the layers.
     * @param contextPage index along the context.
     * @return the page's first byte.
     */
    public long pageAddress(int layerPage, int contextPage)
    {
        return pageAddresses[layerPage][contextPage];
    }
}
