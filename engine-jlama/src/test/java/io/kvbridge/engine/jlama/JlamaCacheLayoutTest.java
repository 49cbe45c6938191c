package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayout;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayoutFactory;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.ServiceLoader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layout against Jlama itself: every block of every region is the address of the rows Jlama's
 * own accessors return for that session slot, layer, plane and token, not the layout's arithmetic
 * checked against itself.
 */
class JlamaCacheLayoutTest
{
    private static final int BLOCK_TOKENS = 16;

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen2"})
    void everyBlockIsWhereJlamaKeepsItsRows(String shape, @TempDir Path dir)
    {
        SyntheticModel model = SyntheticModel.named(shape, 3);
        try (JlamaEngine engine = JlamaEngine.load(SyntheticModelWriter.write(dir.resolve("model"), model), dir.resolve("work"), DType.F32)) {
            JlamaSessionPool pool = new JlamaSessionPool(engine, "synthetic/" + shape, 2, BLOCK_TOKENS);
            CacheLayout layout = factory().create(pool.layoutOptions());
            CacheGeometry geometry = layout.describe(pool.cacheSpec(), pool.memory(), Rank.single());

            JlamaPageGeometry paging = engine.paging();
            // llama: all 8 layers a page, two context pages; qwen2: 4 layers a page, so two layer pages, the second half used
            assertEquals(shape.equals("llama") ? 1 : 2, paging.layerPages());
            assertEquals(2, paging.contextPages());
            assertEquals(2 * paging.layerPages() * paging.contextPages(), geometry.allocations().size(), "every page of both slots is registered");
            assertEquals(2 * model.layers(), geometry.regions().size(), "a key and a value plane per layer");
            int blocksPerSession = model.contextLength() / BLOCK_TOKENS;
            for (int layer = 0; layer < model.layers(); layer++) {
                for (KvPart part : new KvPart[] {KvPart.KEY, KvPart.VALUE}) {
                    Region region = geometry.regions().get(2 * layer + (part == KvPart.VALUE ? 1 : 0));
                    assertEquals(part, region.part());
                    assertEquals(JlamaCacheLayout.layerName(layer), region.members().getFirst());
                    assertEquals(2 * blocksPerSession, region.capacity());
                    assertEquals((long) BLOCK_TOKENS * model.kvLength() * Float.BYTES, region.blockBytes());
                    for (int block = 0; block < region.capacity(); block++) {
                        int slot = block / blocksPerSession;
                        int token = block % blocksPerSession * BLOCK_TOKENS;
                        AbstractTensor<?, ?> row = part == KvPart.KEY ? pool.buffer(slot).getKeyTensorForPosition(layer, token)
                                : pool.buffer(slot).getValTensorForPosition(layer, token);
                        assertEquals(row.getMemorySegment().address(), region.blockAddress(block),
                                "layer " + layer + " " + part + " block " + block + " (slot " + slot + ", token " + token + ")");
                    }
                }
            }
        }
    }

    @Test
    void theFactoryIsFoundByServiceLoaderAndNeedsThePageShape()
    {
        assertTrue(ServiceLoader.load(CacheLayoutFactory.class).stream().anyMatch(p -> p.type() == JlamaCacheLayoutFactory.class));
        KvBridgeException missing = assertThrows(KvBridgeException.class, () -> factory().create(Map.of("layers-per-page", "8")));
        assertEquals(ErrorCode.CONFIG_INVALID, missing.code());
        assertTrue(missing.getMessage().contains("tokens-per-page"), missing.getMessage());
        Map<String, String> unknown = new HashMap<>(Map.of("layers-per-page", "8", "tokens-per-page", "2048", "context-pages", "2", "typo", "1"));
        assertEquals(ErrorCode.CONFIG_INVALID, assertThrows(KvBridgeException.class, () -> factory().create(unknown)).code());
    }

    private static CacheLayoutFactory factory()
    {
        return ServiceLoader.load(CacheLayoutFactory.class).stream().map(ServiceLoader.Provider::get)
                .filter(f -> f.name().equals(JlamaCacheLayout.NAME)).findFirst().orElseThrow();
    }
}
