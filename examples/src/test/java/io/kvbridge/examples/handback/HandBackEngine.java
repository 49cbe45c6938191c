package io.kvbridge.examples.handback;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import io.micrometer.core.instrument.MeterRegistry;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * One engine of a two-way hand-off as an embedder builds it from the public API: one bridge, one
 * cache of two layers in its own memory, and a producer and a consumer over that one cache (kv_both).
 * Block bytes are derived from (turn, layer, position of the block in the conversation, offset), so
 * a misplaced or stale byte is found.
 */
final class HandBackEngine implements AutoCloseable
{
    static final String[] LAYERS = {"model.layers.0.self_attn", "model.layers.1.self_attn"};
    static final int BLOCK_TOKENS = 16;
    static final int BLOCKS = 32;
    static final int KV_HEADS = 4;
    static final int HEAD_SIZE = 64;
    /** A block of one layer: KV heads x tokens x (K, V) x head size x bf16. */
    static final long BLOCK_BYTES = (long) KV_HEADS * BLOCK_TOKENS * 2 * HEAD_SIZE * 2;
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final Arena arena = Arena.ofShared();
    private final MemorySegment[] memory = new MemorySegment[LAYERS.length];
    final KvBridge bridge;
    final CacheGeometry cache;
    final ProducerConnector producer;
    final ConsumerConnector consumer;

    HandBackEngine(String engineId, String transport, byte[] secret)
    {
        ModelIdentity model = new ModelIdentity("example/hand-back-2l", "bfloat16", "bfloat16", KV_HEADS, HEAD_SIZE, LAYERS.length, false);
        ModelCacheSpec spec = new ModelCacheSpec(model, BLOCK_TOKENS, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, KV_HEADS, HEAD_SIZE)),
                Arrays.stream(LAYERS).map(layer -> new LayerSpec(layer, 0)).toList(), List.of(LAYERS.length));
        List<Allocation> allocations = new ArrayList<>();
        for (int layer = 0; layer < LAYERS.length; layer++) {
            memory[layer] = arena.allocate(BLOCKS * BLOCK_BYTES, 4096);
            allocations.add(Allocation.host(memory[layer]));
        }
        this.bridge = KvBridge.builder().transport(transport).agentName(engineId).sideChannelSecret(secret).build();
        try {
            this.cache = bridge.layout("per-layer", Map.of()).describe(spec, CacheMemory.of(allocations), Rank.single());
            ConnectorSettings settings = ConnectorSettings.builder(engineId, cache).cacheSpec(spec).build();
            // one cache, both kinds: the producer serves what this engine hands out, the consumer receives into the same blocks
            this.producer = bridge.producer(settings);
            this.consumer = bridge.consumer(settings);
        }
        catch (RuntimeException e) {
            bridge.close();
            throw e;
        }
    }

    static BlockIds ids(int... blocks)
    {
        return BlockIds.of(blocks);
    }

    private static byte expected(int turn, int layer, int position, int offset)
    {
        return (byte) (turn * 31 + layer * 131 + position * 7 + offset * 13 + 1);
    }

    private MemorySegment block(int layer, int block)
    {
        Region region = cache.regions().get(cache.regionOf(LAYERS[layer]));
        return memory[layer].asSlice(region.blockAddress(block) - memory[layer].address(), region.blockBytes());
    }

    /** Writes the rows of a turn into blocks holding the conversation's positions {@code firstPosition, ...}. */
    void fill(int turn, int firstPosition, int... blocks)
    {
        for (int layer = 0; layer < LAYERS.length; layer++) {
            for (int i = 0; i < blocks.length; i++) {
                MemorySegment block = block(layer, blocks[i]);
                for (int at = 0; at < block.byteSize(); at++) {
                    block.set(ValueLayout.JAVA_BYTE, at, expected(turn, layer, firstPosition + i, at));
                }
            }
        }
    }

    /** {@return how many bytes of the blocks differ from what {@link #fill} writes for those arguments} */
    long wrong(int turn, int firstPosition, int... blocks)
    {
        long wrong = 0;
        for (int layer = 0; layer < LAYERS.length; layer++) {
            for (int i = 0; i < blocks.length; i++) {
                MemorySegment block = block(layer, blocks[i]);
                for (int at = 0; at < block.byteSize(); at++) {
                    wrong += block.get(ValueLayout.JAVA_BYTE, at) == expected(turn, layer, firstPosition + i, at) ? 0 : 1;
                }
            }
        }
        return wrong;
    }

    /** {@return how many bytes of the blocks are not zero: something wrote there} */
    long written(int... blocks)
    {
        long written = 0;
        for (int layer = 0; layer < LAYERS.length; layer++) {
            for (int block : blocks) {
                MemorySegment bytes = block(layer, block);
                for (int at = 0; at < bytes.byteSize(); at++) {
                    written += bytes.get(ValueLayout.JAVA_BYTE, at) == 0 ? 0 : 1;
                }
            }
        }
        return written;
    }

    /** Waits for the consumer's report of one request; {@return null when received, else the failure} */
    String awaitReceived(String requestId)
    {
        long deadline = System.nanoTime() + WAIT.toNanos();
        List<String> received = new ArrayList<>();
        List<ReceiveFailure> failed = new ArrayList<>();
        while (received.isEmpty() && failed.isEmpty()) {
            if (System.nanoTime() - deadline > 0) {
                return "no report of " + requestId + " within " + WAIT;
            }
            ReceiveBatch batch = consumer.poll();
            received.addAll(batch.received());
            failed.addAll(batch.failed());
            LockSupport.parkNanos(1_000_000);
        }
        return failed.isEmpty() && received.equals(List.of(requestId)) ? null : "received " + received + ", failed " + failed;
    }

    /** Collects the producer's reports until one came, then for a while longer, to see a second report if there were one. */
    List<FreedRequest> awaitFreed()
    {
        long deadline = System.nanoTime() + WAIT.toNanos();
        List<FreedRequest> freed = new ArrayList<>();
        while (freed.isEmpty() && System.nanoTime() - deadline < 0) {
            freed.addAll(producer.poll());
            LockSupport.parkNanos(1_000_000);
        }
        LockSupport.parkNanos(200_000_000);
        freed.addAll(producer.poll());
        return freed;
    }

    /** {@return whether both connectors' audits came to idle within the wait} */
    boolean awaitIdle()
    {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!(producer.audit().idle() && consumer.audit().idle())) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            LockSupport.parkNanos(1_000_000);
        }
        return true;
    }

    /** {@return the bytes this engine's transfers moved (those it posted: reads it pulled, writes it pushed)} */
    long movedBytes()
    {
        var summary = bridge.metricsRegistry(MeterRegistry.class).find("kvbridge.transfer.bytes").summary();
        return summary == null ? 0 : (long) summary.totalAmount();
    }

    @Override
    public void close()
    {
        producer.close();
        consumer.close();
        bridge.close();
        arena.close();
    }
}
