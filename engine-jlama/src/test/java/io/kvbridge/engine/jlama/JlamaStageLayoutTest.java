package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayout;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayoutFactory;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.memory.Allocation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A pipeline stage of an engine that computes every layer: its memory is each Jlama page's span of
 * the stage's layers, checked against Jlama's own accessors, so the other layers' planes are never
 * registered, and every block of the stage's regions is the row Jlama keeps there.
 */
class JlamaStageLayoutTest
{
    private static final int BLOCK_TOKENS = 16;

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen2"})
    void eachStageRegistersOnlyItsLayersAndEveryBlockIsJlamasRow(String shape, @TempDir Path dir)
    {
        SyntheticModel model = SyntheticModel.named(shape, 3);
        try (JlamaEngine engine = JlamaEngine.load(SyntheticModelWriter.write(dir.resolve("model"), model), dir.resolve("work"), DType.F32)) {
            JlamaSessionPool pool = new JlamaSessionPool(engine, "synthetic/" + shape, 2, BLOCK_TOKENS);
            int blocksPerSession = model.contextLength() / BLOCK_TOKENS;
            long registered = 0;
            for (int p = 0; p < 2; p++) {
                JlamaStage stage = new JlamaStage(p, 2, model.layers());
                CacheLayout layout = new JlamaCacheLayoutFactory().create(pool.layoutOptions(stage));
                CacheGeometry geometry = layout.describe(pool.cacheSpec(stage), pool.memory(stage), stage.rank());
                List<Integer> own = IntStream.range(stage.firstLayer(), stage.endLayer()).boxed().toList();
                assertEquals(own, List.copyOf(pool.layersIn(geometry.allocations())), "stage " + p + " registers its own layers' planes only");
                assertEquals(2 * own.size(), geometry.regions().size());
                registered += geometry.allocations().stream().mapToLong(Allocation::bytes).sum();
                for (int i = 0; i < own.size(); i++) {
                    int layer = own.get(i);
                    for (KvPart part : new KvPart[] {KvPart.KEY, KvPart.VALUE}) {
                        Region region = geometry.regions().get(2 * i + (part == KvPart.VALUE ? 1 : 0));
                        assertEquals(JlamaCacheLayout.layerName(layer), region.members().getFirst(), "regions are named by global layer");
                        for (int block = 0; block < region.capacity(); block++) {
                            int slot = block / blocksPerSession;
                            int token = block % blocksPerSession * BLOCK_TOKENS;
                            AbstractTensor<?, ?> row = part == KvPart.KEY ? pool.buffer(slot).getKeyTensorForPosition(layer, token)
                                    : pool.buffer(slot).getValTensorForPosition(layer, token);
                            assertEquals(row.getMemorySegment().address(), region.blockAddress(block),
                                    "stage " + p + " layer " + layer + " " + part + " block " + block);
                        }
                    }
                }
            }
            long everyLayer = 2L * model.layers() * 2 * model.contextLength() * model.kvLength() * Float.BYTES;
            assertEquals(everyLayer, registered, "the two stages together register every layer's planes of both slots once");
        }
    }

    @Test
    void aStageOfPagesThatHoldEveryLayerRefusesWholePages(@TempDir Path dir)
    {
        SyntheticModel model = SyntheticModel.llamaGqa(3);
        try (JlamaEngine engine = JlamaEngine.load(SyntheticModelWriter.write(dir.resolve("model"), model), dir.resolve("work"), DType.F32)) {
            JlamaSessionPool pool = new JlamaSessionPool(engine, "synthetic/llama", 1, BLOCK_TOKENS);
            JlamaStage stage = new JlamaStage(1, 2, model.layers());
            CacheLayout layout = new JlamaCacheLayoutFactory().create(pool.layoutOptions(stage));
            // whole pages would register the other stage's layers too
            KvBridgeException refused = assertThrows(KvBridgeException.class, () -> layout.describe(pool.cacheSpec(stage), pool.memory(), stage.rank()));
            assertEquals(ErrorCode.LAYOUT_UNSUPPORTED, refused.code());
            assertTrue(refused.getMessage().contains("pages-hold=model"), refused.getMessage());
            KvBridgeException uneven = assertThrows(KvBridgeException.class, () -> new JlamaStage(0, 3, model.layers()));
            assertTrue(uneven.getMessage().contains("8 layers do not split into 3 equal pipeline stages"), uneven.getMessage());
            KvBridgeException badOption = assertThrows(KvBridgeException.class, () -> new JlamaCacheLayoutFactory().create(Map.of("layers-per-page", "8",
                    "tokens-per-page", "2048", "context-pages", "2", JlamaCacheLayoutFactory.PAGES_HOLD, "all")));
            assertEquals(ErrorCode.CONFIG_INVALID, badOption.code());
        }
    }
}
