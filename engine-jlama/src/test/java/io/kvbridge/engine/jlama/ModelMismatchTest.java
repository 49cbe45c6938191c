package io.kvbridge.engine.jlama;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayout;
import io.kvbridge.engine.jlama.layout.JlamaPaging;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A decoder whose model differs from the producer's (layers, KV heads) is refused at the handshake,
 * before any byte moves, with both sides named. Jlama's pages are stood in for by plain memory of
 * their shape: the refusal depends only on what each side's geometry advertises.
 */
class ModelMismatchTest
{
    @Test
    void aDecoderOfAnotherModelIsRefusedNamingBothSides() throws InterruptedException
    {
        try (Arena arena = Arena.ofShared();
                KvBridge prefill = KvBridge.builder().transport("local").agentName("jlama-mismatch-prefill").build();
                KvBridge decode = KvBridge.builder().transport("local").agentName("jlama-mismatch-decode").build()) {
            Described llama = describe(SyntheticModel.llamaGqa(1), arena);
            Described qwen2 = describe(SyntheticModel.qwen2(1), arena);
            try (ProducerConnector producer = prefill.producer(ConnectorSettings.builder("jlama-prefill", llama.geometry()).layout(llama.layout()).build());
                    ConsumerConnector consumer = decode.consumer(ConnectorSettings.builder("jlama-decode", qwen2.geometry()).layout(qwen2.layout()).build())) {
                TransferParams params = producer.prefillFinished("r1", BlockIds.of(new int[] {0, 1}));
                consumer.blocksAllocated("r1", params, TransferMode.PULL, BlockIds.of(new int[] {0, 1}));
                ReceiveFailure failure = null;
                long deadline = System.nanoTime() + 20_000_000_000L;
                while (failure == null && System.nanoTime() < deadline) {
                    ReceiveBatch batch = consumer.poll();
                    assertTrue(batch.received().isEmpty(), "nothing may be received from another model");
                    failure = batch.failed().stream().filter(f -> f.requestId().equals("r1")).findFirst().orElse(null);
                    Thread.sleep(2);
                }
                assertNotNull(failure, "the decoder must refuse the request");
                String message = failure.message();
                assertTrue(message.contains("\"layer_count\": 8") && message.contains("\"layer_count\": 6"), message);
                assertTrue(message.contains("\"total_kv_heads\": 2") && message.contains("\"total_kv_heads\": 4"), message);
            }
        }
    }

    private record Described(JlamaCacheLayout layout, CacheGeometry geometry)
    {
    }

    private static Described describe(SyntheticModel model, Arena arena)
    {
        JlamaPageGeometry g = JlamaPageGeometry.compute(model.layers(), model.contextLength(), model.kvLength(), Float.BYTES,
                JlamaPageGeometry.SESSION_PAGE_BUDGET);
        List<Allocation> pages = new ArrayList<>();
        for (int p = 0; p < g.layerPages() * g.contextPages(); p++) {
            pages.add(Allocation.host(arena.allocate(g.pageBytes(), 4096)));
        }
        ModelIdentity identity = new ModelIdentity("synthetic/" + model.architecture(), "float32", "float32", model.kvHeads(), model.headSize(),
                model.layers(), false);
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < model.layers(); i++) {
            layers.add(new LayerSpec(JlamaCacheLayout.layerName(i), 0));
        }
        ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, model.kvHeads(), model.headSize())),
                layers, List.of(model.layers()));
        JlamaCacheLayout layout = new JlamaCacheLayout(new JlamaPaging(g.layersPerPage(), g.tokensPerPage(), g.contextPages()));
        return new Described(layout, layout.describe(spec, CacheMemory.of(pages), Rank.single()));
    }
}
