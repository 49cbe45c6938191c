package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.safetensors.DType;
import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayout;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Rank;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A session longer than one of Jlama's context pages moves through kvbridge's planner and a
 * transport into another slot's pages: its blocks come from two runs of every region on the
 * producer (slot 1, context pages 0 and 1) and land in two runs on the consumer (slot 0), and the
 * consumer decodes the same tokens and logits bits as the producer's own continuation.
 */
class PageSpanningTransferTest
{
    /** 8 KV heads of 32 make 1 KiB key rows: Jlama pages 8 layers by 512 tokens, so 1024 tokens take two context pages. */
    private static final SyntheticModel WIDE_KV = new SyntheticModel("llama", 8, 8, 8, 256, 256, 512, 1024, 21);

    @Test
    void aSessionAcrossTwoContextPagesDecodesBitIdentically(@TempDir Path dir) throws InterruptedException
    {
        try (JlamaEngine engine = JlamaEngine.load(SyntheticModelWriter.write(dir.resolve("model"), WIDE_KV), dir.resolve("work"), DType.F32)) {
            assertEquals(512, engine.paging().tokensPerPage());
            assertEquals(2, engine.paging().contextPages());
            JlamaSessionPool producerPool = new JlamaSessionPool(engine, "synthetic/wide-kv", 2, 16);
            JlamaSessionPool consumerPool = new JlamaSessionPool(engine, "synthetic/wide-kv", 2, 16);
            int[] prompt = ResumeFromCopiedCacheTest.prompt(600, 4);
            int producerSlot = 1;
            JlamaEngine.Step first = engine.prefill(producerPool.buffer(producerSlot), prompt);

            try (KvBridge prefill = KvBridge.builder().transport("local").agentName("jlama-pages-prefill").build();
                    KvBridge decode = KvBridge.builder().transport("local").agentName("jlama-pages-decode").build();
                    ProducerConnector producer = prefill.producer(settings(prefill, producerPool, "jlama-pages-prefill"));
                    ConsumerConnector consumer = decode.consumer(settings(decode, consumerPool, "jlama-pages-decode"))) {
                BlockIds produced = producerPool.blockIds(producerSlot, prompt.length);
                assertEquals(38, produced.group(0).length, "600 tokens in 16-token blocks");
                TransferParams params = producer.prefillFinished("long", produced);
                consumer.blocksAllocated("long", params, TransferMode.PULL, consumerPool.blockIds(0, prompt.length));
                awaitReceived(consumer, "long");
            }

            int[] expected = new int[4];
            int[] actual = new int[4];
            long forwardedBefore = 0;
            int producerToken = first.token();
            int consumerToken = first.token();
            for (int s = 0; s < expected.length; s++) {
                JlamaEngine.Step own = engine.decode(producerPool.buffer(producerSlot), producerToken, prompt.length + s);
                forwardedBefore = engine.forwardTokens();
                JlamaEngine.Step moved = engine.decode(consumerPool.buffer(0), consumerToken, prompt.length + s);
                assertEquals(1, engine.forwardTokens() - forwardedBefore, "the consumer runs one token a step, never the prompt");
                assertArrayEquals(ResumeFromCopiedCacheTest.bits(own.logits()), ResumeFromCopiedCacheTest.bits(moved.logits()), "logits of step " + s);
                expected[s] = producerToken = own.token();
                actual[s] = consumerToken = moved.token();
            }
            assertArrayEquals(expected, actual);
        }
    }

    private static ConnectorSettings settings(KvBridge bridge, JlamaSessionPool pool, String engineId)
    {
        JlamaCacheLayout layout = (JlamaCacheLayout) bridge.layout(JlamaCacheLayout.NAME, pool.layoutOptions());
        CacheGeometry geometry = layout.describe(pool.cacheSpec(), pool.memory(), Rank.single());
        return ConnectorSettings.builder(engineId, geometry).cacheSpec(pool.cacheSpec()).layout(layout).build();
    }

    private static void awaitReceived(ConsumerConnector consumer, String id) throws InterruptedException
    {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (System.nanoTime() < deadline) {
            ReceiveBatch batch = consumer.poll();
            assertTrue(batch.failed().isEmpty(), () -> "transfer failed: " + batch.failed());
            if (batch.received().contains(id)) {
                return;
            }
            Thread.sleep(1);
        }
        throw new AssertionError("blocks of " + id + " not received within 30 s");
    }
}
