package io.kvbridge.engine.jlama.layout;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.BlockRun;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static java.util.Objects.requireNonNull;

/**
 * The {@code jlama} layout: Jlama's KV pages described as they are.
 *
 * <p>Jlama keeps each session's cache in pages it allocates one by one (mapped files in its
 * working directory), each shaped {@code [layersPerPage, 2, tokensPerPage, kvLength]}: for every
 * layer of the page its key plane, then its value plane, each {@code tokensPerPage} rows of one
 * token's heads. A kvbridge block is {@code blockTokens} consecutive rows of one plane, so a plane
 * of one page holds {@code tokensPerPage / blockTokens} blocks one block apart, and a layer's
 * planes are two regions ({@link KvPart#KEY}, {@link KvPart#VALUE}) whose blocks lie in every
 * page of the layer, page after page: one {@link BlockRun} per session and context page. Block id
 * {@code s * blocksPerSession + j} is token block {@code j} of session slot {@code s}.
 *
 * <p>The memory is every page of every session slot, one allocation each, in the order
 * session, layer page, context page. A pipeline stage's memory holds only its layers: the pages of
 * a layer shard, or, when Jlama's pages hold every layer of the model ({@code pages-hold=model}),
 * each page's span of the stage's layers ({@link JlamaPaging}). Token rows hold all of a token's heads, so heads are
 * interleaved inside a block ({@link SplitClass#INTERLEAVED}); the layout serves one tensor-parallel
 * rank.
 */
public final class JlamaCacheLayout implements CacheLayout
{
    /** The layout's name. */
    public static final String NAME = "jlama";

    private final JlamaPaging paging;

    /**
     * Creates the layout for one page shape.
     *
     * @param paging Jlama's page shape.
     */
    public JlamaCacheLayout(JlamaPaging paging)
    {
        this.paging = requireNonNull(paging, "paging is null");
    }

    @Override
    public String name()
    {
        return NAME;
    }

    /**
     * Returns the global name of a layer's attention, the name its planes are paired by.
     *
     * @param layer the global layer index.
     * @return {@code model.layers.<layer>.self_attn}.
     */
    public static String layerName(int layer)
    {
        return "model.layers." + layer + ".self_attn";
    }

    @Override
    public CacheGeometry describe(ModelCacheSpec spec, CacheMemory memory, Rank rank)
    {
        requireNonNull(spec, "spec is null");
        requireNonNull(memory, "memory is null");
        requireNonNull(rank, "rank is null");
        check(rank.tpSize() == 1, ErrorCode.TP_UNSUPPORTED, "rank %s: the jlama layout describes one tensor-parallel rank (tpSize=%d); run Jlama unsharded",
                rank, rank.tpSize());
        check(spec.ppSize() == rank.ppSize(), ErrorCode.GEOMETRY_INVALID, "rank %s has ppSize=%d but the spec has %d stages", rank, rank.ppSize(),
                spec.ppSize());
        check(spec.groups().size() == 1 && spec.groups().getFirst().kind() == GroupKind.FULL_ATTENTION, ErrorCode.LAYOUT_UNSUPPORTED,
                "the jlama layout has one full-attention cache group, the spec has %s", spec.groups());
        CacheGroup group = spec.groups().getFirst();
        int blockTokens = spec.kernelBlockTokens();
        check(paging.tokensPerPage() % blockTokens == 0, ErrorCode.LAYOUT_UNSUPPORTED,
                "Jlama pages hold tokens-per-page=%d tokens, not a multiple of blockTokens=%d: a block would straddle two pages; "
                        + "choose a block size that divides %d", paging.tokensPerPage(), blockTokens, paging.tokensPerPage());
        long rowBytes = (long) group.kvHeads() * group.headSize() * spec.identity().cacheElementBytes();
        long blockBytes = blockTokens * rowBytes;
        long planeBytes = paging.planeBytes(rowBytes);
        int firstLayer = spec.stageStart(rank.ppRank());
        int stageLayers = spec.stageLayerCounts().get(rank.ppRank());
        int firstPage = paging.firstLayerPage(firstLayer);
        int layerPages = paging.stageLayerPages(firstLayer, stageLayers);
        int pagesPerSession = layerPages * paging.contextPages();
        List<Allocation> pages = memory.allocations();
        check(pages.size() % pagesPerSession == 0, ErrorCode.LAYOUT_UNSUPPORTED,
                "%d allocations given but a session has %d pages (%d layer pages x context-pages=%d); pass every page of every session slot",
                pages.size(), pagesPerSession, layerPages, paging.contextPages());
        for (int i = 0; i < pages.size(); i++) {
            Allocation page = pages.get(i);
            // with model pages an allocation is the page's span of this stage's layers, which may be part of a page
            int layerPage = firstPage + i / paging.contextPages() % layerPages;
            long expected = paging.spanLayers(firstLayer, stageLayers, layerPage) * 2L * planeBytes;
            check(page.bytes() == expected, ErrorCode.LAYOUT_UNSUPPORTED,
                    "allocation %d holds %d bytes but %d layers of a Jlama page [layers-per-page=%d, 2, tokens-per-page=%d, %d heads x %d x %d bytes] "
                            + "hold %d (page %d of a stage of layers %d..%d, pages-hold=%s)",
                    i, page.bytes(), paging.spanLayers(firstLayer, stageLayers, layerPage), paging.layersPerPage(), paging.tokensPerPage(),
                    group.kvHeads(), group.headSize(), spec.identity().cacheElementBytes(), expected, layerPage, firstLayer,
                    firstLayer + stageLayers - 1, paging.modelPages() ? "model" : "stage");
        }
        int sessions = pages.size() / pagesPerSession;
        int blocksPerPage = paging.tokensPerPage() / blockTokens;
        List<Region> regions = new ArrayList<>();
        for (int layerIndex = firstLayer; layerIndex < firstLayer + stageLayers; layerIndex++) {
            int layerPage = paging.pageOfLayer(firstLayer, layerIndex);
            int slotInSpan = paging.slotOfLayer(firstLayer, layerIndex) - paging.spanStart(firstLayer, layerPage);
            String layer = layerName(layerIndex);
            for (KvPart part : List.of(KvPart.KEY, KvPart.VALUE)) {
                long offset = ((long) slotInSpan * 2 + (part == KvPart.VALUE ? 1 : 0)) * planeBytes;
                List<BlockRun> runs = new ArrayList<>(sessions * paging.contextPages());
                for (int s = 0; s < sessions; s++) {
                    for (int c = 0; c < paging.contextPages(); c++) {
                        runs.add(new BlockRun(pages.get(paging.pageIndex(s, layerPage - firstPage, c, layerPages)).address() + offset, blocksPerPage));
                    }
                }
                regions.add(new Region(layer + "." + part.name().toLowerCase(Locale.ROOT), runs.getFirst().base(), blockBytes, blockBytes,
                        runs.size() * blocksPerPage, 0, pages.getFirst().kind(), pages.getFirst().device(), SplitClass.INTERLEAVED, List.of(layer),
                        List.of(), part, runs));
            }
        }
        return new CacheGeometry(NAME, rank, spec.identity(), spec.blockTokens(), spec.kernelBlocksPerLogical(), spec.groups(), pages, regions);
    }

    private static void check(boolean condition, ErrorCode code, String format, Object... args)
    {
        KvBridgeException.check(condition, code, format, args);
    }
}
