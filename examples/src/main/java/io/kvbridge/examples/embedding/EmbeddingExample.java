package io.kvbridge.examples.embedding;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.json.TransferParamsJson;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How an inference engine embeds kvbridge, in one file to copy. A prefill engine and a decode engine
 * run here in one process over the {@code local} transport; in a real deployment each runs in its
 * own process with a cross-process transport, and the {@link TransferParams} travel as JSON
 * ({@link TransferParamsJson}) through the router that sends the request from one engine to the other.
 *
 * <p>Per rank (one tensor-parallel worker of one pipeline stage) an engine does four things:
 * describe its KV cache with a layout, open a connector, report requests, and poll.
 */
public final class EmbeddingExample
{
    private EmbeddingExample()
    {
    }

    /**
     * Moves one request's KV cache from a prefill engine to a decode engine.
     *
     * @param args unused.
     * @throws InterruptedException when interrupted while polling.
     */
    public static void main(String[] args) throws InterruptedException
    {
        System.out.println(run() ? "received" : "failed");
    }

    /**
     * Runs the example.
     *
     * @return true when the decoder received the request and the producer freed its blocks.
     * @throws InterruptedException when interrupted while polling.
     */
    public static boolean run() throws InterruptedException
    {
        // 1. The model's KV cache as the engine sees it: layers with global names, their cache groups, the block size.
        int layerCount = 4;
        int capacity = 64;
        ModelIdentity model = ModelIdentity.builder("example/llama-4l").dtype("bfloat16").cacheDtype("bfloat16")
                .totalKvHeads(8).headSize(64).layerCount(layerCount).build();
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < layerCount; i++) {
            layers.add(new LayerSpec("model.layers." + i + ".self_attn", 0));
        }
        ModelCacheSpec spec = new ModelCacheSpec(model, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 64)), layers,
                List.of(layerCount));
        long blockBytes = 8L * 16 * 2 * 64 * 2; // heads x tokens x (K, V) x headSize x bf16

        // one bridge per engine process: it finds the transports and layouts on the class path
        try (Arena arena = Arena.ofShared();
                KvBridge prefill = KvBridge.builder().transport("local").agentName("example-prefill").build();
                KvBridge decode = KvBridge.builder().transport("local").agentName("example-decode").build()) {

            // 2. Describe where the rank's cache lives; the engine allocated it (here: host memory, one allocation per layer).
            CacheGeometry producerCache = describe(prefill, spec, arena, layerCount, capacity * blockBytes);
            CacheGeometry consumerCache = describe(decode, spec, arena, layerCount, capacity * blockBytes);

            // 3. One connector per rank; it registers the cache with its transport and serves the engine's side channel.
            try (ProducerConnector producer = prefill.producer(ConnectorSettings.builder("prefill", producerCache).cacheSpec(spec).build());
                    ConsumerConnector consumer = decode.consumer(ConnectorSettings.builder("decode", consumerCache).cacheSpec(spec).build())) {

                // 4. Prefill finished into blocks 3, 4, 5: the producer holds them under a lease and returns what the router forwards.
                TransferParams params = producer.prefillFinished("req-1", BlockIds.of(new int[] {3, 4, 5}));

                // the router carries them as JSON, under vLLM's kv_transfer_params names
                String kvTransferParams = TransferParamsJson.write(params);

                // 5. The decoder allocated blocks 10, 11, 12 for the same prompt and asks for the KV cache (push: the producer writes).
                consumer.blocksAllocated("req-1", TransferParamsJson.read(kvTransferParams), TransferMode.PUSH, BlockIds.of(new int[] {10, 11, 12}));

                // 6. Both engines poll from their scheduler loop: the decoder learns what arrived, the producer what it may free.
                boolean received = false;
                boolean freed = false;
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (!(received && freed) && System.nanoTime() < deadline) {
                    ReceiveBatch batch = consumer.poll();
                    received |= batch.received().contains("req-1");
                    if (!batch.failed().isEmpty()) {
                        // a failure names the blocks to recompute and the policy; an engine reschedules the prompt
                        return false;
                    }
                    for (FreedRequest request : producer.poll()) {
                        freed |= request.requestId().equals("req-1");
                    }
                    Thread.sleep(1);
                }
                return received && freed;
            }
        }
    }

    private static CacheGeometry describe(KvBridge bridge, ModelCacheSpec spec, Arena arena, int layers, long bytesPerLayer)
    {
        List<Allocation> allocations = new ArrayList<>();
        for (int i = 0; i < layers; i++) {
            MemorySegment layer = arena.allocate(bytesPerLayer, 4096);
            allocations.add(Allocation.host(layer));
        }
        // the layout turns the allocations into the geometry peers exchange: regions, block bytes, strides, capacities;
        // a worker of a parallel engine names its place instead: Rank.pipeline(ppRank, ppSize).tensor(tpRank, tpSize)
        return bridge.layout("per-layer", Map.of()).describe(spec, CacheMemory.of(allocations), Rank.single());
    }
}
