package io.kvbridge.engine.jlama.layout;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * Jlama's page shape as the layout's options give it: every page is one allocation shaped
 * {@code [layersPerPage, 2, tokensPerPage, kvLength]}, and a session has {@code contextPages}
 * pages along the context for each group of {@code layersPerPage} layers.
 *
 * @param layersPerPage layers one page holds.
 * @param tokensPerPage tokens one page holds.
 * @param contextPages pages along the context per layer page.
 */
public record JlamaPaging(int layersPerPage, int tokensPerPage, int contextPages)
{
    /** Validates the values. */
    public JlamaPaging
    {
        checkArgument(layersPerPage > 0, "layers-per-page=%d is not positive", layersPerPage);
        checkArgument(tokensPerPage > 0, "tokens-per-page=%d is not positive", tokensPerPage);
        checkArgument(contextPages > 0, "context-pages=%d is not positive", contextPages);
    }

    /**
     * Returns the pages along the layers for a stage.
     *
     * @param stageLayers layers the stage owns.
     * @return {@code ceil(stageLayers / layersPerPage)}.
     */
    public int layerPages(int stageLayers)
    {
        return (stageLayers + layersPerPage - 1) / layersPerPage;
    }

    /**
     * Returns the pages of one session.
     *
     * @param stageLayers layers the stage owns.
     * @return {@code layerPages * contextPages}.
     */
    public int pagesPerSession(int stageLayers)
    {
        return layerPages(stageLayers) * contextPages;
    }

    /**
     * Returns the bytes of one layer's key (or value) plane in a page.
     *
     * @param rowBytes bytes of one token's key row.
     * @return {@code tokensPerPage * rowBytes}.
     */
    public long planeBytes(long rowBytes)
    {
        return tokensPerPage * rowBytes;
    }

    /**
     * Returns the bytes of one page.
     *
     * @param rowBytes bytes of one token's key row.
     * @return {@code layersPerPage * 2 * planeBytes}.
     */
    public long pageBytes(long rowBytes)
    {
        return layersPerPage * 2L * planeBytes(rowBytes);
    }

    /**
     * Returns the index of a page in the allocation list: sessions outermost, then layer pages,
     * then context pages.
     *
     * @param session the session slot.
     * @param layerPage the layer page.
     * @param contextPage the context page.
     * @param layerPages layer pages per session.
     * @return the allocation index.
     */
    public int pageIndex(int session, int layerPage, int contextPage, int layerPages)
    {
        return (session * layerPages + layerPage) * contextPages + contextPage;
    }
}
