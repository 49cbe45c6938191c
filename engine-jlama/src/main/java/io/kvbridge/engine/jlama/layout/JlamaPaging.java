package io.kvbridge.engine.jlama.layout;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * Jlama's page shape as the layout's options give it: every page is shaped
 * {@code [layersPerPage, 2, tokensPerPage, kvLength]}, and a session has {@code contextPages}
 * pages along the context for each group of {@code layersPerPage} layers.
 *
 * <p>Whose layers the pages hold decides what a pipeline stage's memory is. With
 * {@code modelPages} false the pages hold the stage's layers only (as Jlama pages a layer shard:
 * its first page starts at the stage's first layer) and every page is one allocation. With
 * {@code modelPages} true the pages hold every layer of the model (an engine that computes all
 * layers but serves one stage) and the memory is each page's span of the stage's layers only, so
 * the other layers' planes are never registered.
 *
 * @param layersPerPage layers one page holds.
 * @param tokensPerPage tokens one page holds.
 * @param contextPages pages along the context per layer page.
 * @param modelPages whether the pages hold every model layer (true) or the stage's only (false).
 */
public record JlamaPaging(int layersPerPage, int tokensPerPage, int contextPages, boolean modelPages)
{
    /**
     * Pages that hold the stage's layers only: every page is an allocation.
     *
     * @param layersPerPage layers one page holds.
     * @param tokensPerPage tokens one page holds.
     * @param contextPages pages along the context per layer page.
     */
    public JlamaPaging(int layersPerPage, int tokensPerPage, int contextPages)
    {
        this(layersPerPage, tokensPerPage, contextPages, false);
    }

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
     * Returns the index of the first layer page that holds a stage layer, counted from the first
     * page a session's allocations hold.
     *
     * @param firstLayer the stage's first global layer.
     * @return 0 when the pages hold the stage's layers only; else the page of {@code firstLayer}.
     */
    public int firstLayerPage(int firstLayer)
    {
        return modelPages ? firstLayer / layersPerPage : 0;
    }

    /**
     * Returns the layer pages a stage's memory spans, per session and context page.
     *
     * @param firstLayer the stage's first global layer.
     * @param stageLayers layers the stage owns.
     * @return the pages from {@link #firstLayerPage} to the page of the stage's last layer.
     */
    public int stageLayerPages(int firstLayer, int stageLayers)
    {
        return modelPages ? (firstLayer + stageLayers - 1) / layersPerPage - firstLayerPage(firstLayer) + 1 : layerPages(stageLayers);
    }

    /**
     * Returns the first layer slot of a page that the stage's memory holds.
     *
     * @param firstLayer the stage's first global layer.
     * @param layerPage the page, counted as in {@link #pageOfLayer}.
     * @return 0 for pages of the stage's layers only; else the slot of the stage's first layer in that page, or 0.
     */
    public int spanStart(int firstLayer, int layerPage)
    {
        return modelPages ? Math.max(firstLayer, layerPage * layersPerPage) - layerPage * layersPerPage : 0;
    }

    /**
     * Returns how many layer slots of a page the stage's memory holds.
     *
     * @param firstLayer the stage's first global layer.
     * @param stageLayers layers the stage owns.
     * @param layerPage the page, counted as in {@link #pageOfLayer}.
     * @return {@code layersPerPage} for pages of the stage's layers only; else the stage's layers in that page.
     */
    public int spanLayers(int firstLayer, int stageLayers, int layerPage)
    {
        if (!modelPages) {
            return layersPerPage;
        }
        int end = Math.min(firstLayer + stageLayers, (layerPage + 1) * layersPerPage) - layerPage * layersPerPage;
        return end - spanStart(firstLayer, layerPage);
    }

    /**
     * Returns the page that holds a layer: counted from the model's first layer when the pages
     * hold every layer, else from the stage's.
     *
     * @param firstLayer the stage's first global layer.
     * @param layer the global layer.
     * @return the layer page.
     */
    public int pageOfLayer(int firstLayer, int layer)
    {
        return (modelPages ? layer : layer - firstLayer) / layersPerPage;
    }

    /**
     * Returns a layer's slot inside its page.
     *
     * @param firstLayer the stage's first global layer.
     * @param layer the global layer.
     * @return the slot, 0 to {@code layersPerPage - 1}.
     */
    public int slotOfLayer(int firstLayer, int layer)
    {
        return (modelPages ? layer : layer - firstLayer) % layersPerPage;
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
