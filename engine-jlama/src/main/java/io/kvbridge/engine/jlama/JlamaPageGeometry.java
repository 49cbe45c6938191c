package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.safetensors.Config;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * How Jlama pages one session's KV cache ({@code KvBufferCache.KvBuffer}): a grid of
 * {@code layerPages x contextPages} pages, each a separate allocation shaped
 * {@code [layersPerPage, 2, tokensPerPage, kvLength]} (K and V planes per layer, tokens
 * contiguous). Jlama picks the page shape from the model and the 8 MiB page budget of
 * {@code KvBufferCache.getKvBuffer}; this record repeats that choice so that a layout can be
 * described before any page exists, and {@link JlamaSessionPages} checks it against the addresses
 * Jlama actually hands out.
 *
 * @param layers the model's layers.
 * @param kvLength elements of one token's key (or value) row.
 * @param elementBytes bytes per element of the working dtype (4 for F32, 2 for BF16).
 * @param layersPerPage layers one page holds.
 * @param tokensPerPage tokens one page holds.
 * @param layerPages pages along the layers.
 * @param contextPages pages along the context.
 */
public record JlamaPageGeometry(int layers, int kvLength, int elementBytes, int layersPerPage, int tokensPerPage, int layerPages, int contextPages)
{
    /** The page budget {@code KvBufferCache.getKvBuffer} gives a session's pages. */
    public static final long SESSION_PAGE_BUDGET = 1L << 23;

    /** Validates the values. */
    public JlamaPageGeometry
    {
        checkArgument(layers > 0 && kvLength > 0 && elementBytes > 0, "layers=%d kvLength=%d elementBytes=%d must be positive", layers, kvLength,
                elementBytes);
        checkArgument(layersPerPage > 0 && tokensPerPage > 0, "layersPerPage=%d tokensPerPage=%d must be positive", layersPerPage, tokensPerPage);
        checkArgument((long) layerPages * layersPerPage >= layers, "layerPages=%d x layersPerPage=%d hold fewer than layers=%d", layerPages,
                layersPerPage, layers);
    }

    /**
     * Computes the paging Jlama chooses for a loaded model's sessions.
     *
     * @param model the loaded model (one pipeline stage holds {@code dctx().numberOfLayers}).
     * @return the paging.
     */
    public static JlamaPageGeometry of(AbstractModel model)
    {
        Config c = model.getConfig();
        return compute(c.dctx().numberOfLayers, c.contextLength, c.dctx().kvSegmentLength, model.getWorkingDType().size(), SESSION_PAGE_BUDGET);
    }

    /**
     * Repeats Jlama's page-shape search: the most layers-by-tokens per page that fits the budget,
     * with at most {@code contextLength} tokens a page. When no split fits (a small model whose
     * whole cache is under the budget), Jlama falls back to pages of one layer by one token.
     *
     * @param layers layers of the stage.
     * @param contextLength the model's context length.
     * @param kvLength elements of one key row.
     * @param elementBytes bytes per element.
     * @param pageBudget the largest page in bytes.
     * @return the paging.
     */
    static JlamaPageGeometry compute(int layers, int contextLength, int kvLength, int elementBytes, long pageBudget)
    {
        long perLayerToken = 2L * elementBytes * kvLength;
        checkArgument(pageBudget > perLayerToken, "page budget=%d is not above one layer-token of %d bytes", pageBudget, perLayerToken);
        int bestLayers = 1;
        int bestTokens = 1;
        long best = 0;
        for (int x = layers; x >= 1; x--) {
            long y = pageBudget / (x * perLayerToken);
            if (y >= 1 && y <= contextLength) {
                long product = x * y;
                if (product > best) {
                    bestLayers = x;
                    bestTokens = (int) y;
                    best = product;
                }
                if (product < best) {
                    break;
                }
            }
        }
        return new JlamaPageGeometry(layers, kvLength, elementBytes, bestLayers, bestTokens, ceilDiv(layers, bestLayers),
                ceilDiv(contextLength, bestTokens));
    }

    /**
     * Returns the bytes of one token's key (or value) row.
     *
     * @return {@code kvLength * elementBytes}.
     */
    public long rowBytes()
    {
        return (long) kvLength * elementBytes;
    }

    /**
     * Returns the bytes of one layer's key (or value) plane in one page.
     *
     * @return {@code tokensPerPage * rowBytes()}.
     */
    public long planeBytes()
    {
        return tokensPerPage * rowBytes();
    }

    /**
     * Returns the bytes of one page.
     *
     * @return {@code layersPerPage * 2 * planeBytes()}.
     */
    public long pageBytes()
    {
        return layersPerPage * 2L * planeBytes();
    }

    /**
     * Returns where a layer's plane starts inside its page.
     *
     * @param layer the layer (stage-relative).
     * @param value false for the key plane, true for the value plane.
     * @return the byte offset from the page's start.
     */
    public long planeOffset(int layer, boolean value)
    {
        return ((long) (layer % layersPerPage) * 2 + (value ? 1 : 0)) * planeBytes();
    }

    private static int ceilDiv(int a, int b)
    {
        return (a + b - 1) / b;
    }
}
