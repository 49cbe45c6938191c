package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.Integrity;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Rank;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Block digests end to end: real connectors, loopback side channels and the local transport, in push and pull. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class BlockDigestTest
{
    private static final Rank SINGLE = Rank.single();
    private static final UnaryOperator<ConnectorSettings.Builder> CRC32C = b -> b.integrity(Integrity.CRC32C);

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aByteChangedAfterTheDigestFailsTheRequestNamingGroupAndFirstBlock(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(3, 64, false);
            TestCache producerCache = harness.cache(shape, SINGLE);
            TestCache consumerCache = harness.cache(shape, SINGLE);
            ProducerRank producer = harness.producer("prefill", producerCache, true, CRC32C);
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, CRC32C);

            // unchanged: received, every byte the producer's
            int[] intact = {1, 2, 3, 4};
            producerCache.fill(1, intact);
            TransferParams params = producer.prefillFinished("intact", ids(intact));
            assertFalse(params.digests().isNone(), "a producer with integrity on sends digests");
            assertEquals(List.of("intact-d"), receive(consumer, "intact-d", params, mode, new int[] {10, 11, 12, 13}).received);
            consumerCache.check(1, new int[] {10, 11, 12, 13}, 4);

            // one byte of the third block of layer 1 changes after prefillFinished digested it
            int[] changed = {5, 6, 7, 8};
            producerCache.fill(2, changed);
            params = producer.prefillFinished("changed", ids(changed));
            flipByte(producerCache, 1, changed[2], 17);
            Outcome outcome = receive(consumer, "changed-d", params, mode, new int[] {20, 21, 22, 23});
            assertEquals(List.of(), outcome.received, "a request whose bytes differ is never reported received");
            ReceiveFailure failure = outcome.failed.getFirst();
            assertEquals(ErrorCode.DIGEST_MISMATCH, failure.code(), failure.toString());
            assertTrue(failure.message().contains("group 0 from block id 22 (exchanged position 2 of 4)"), failure.message());
            assertEquals(2, failure.firstInvalidBlock());
            assertEquals(BlockIds.of(new int[] {22, 23}), failure.invalidBlocks(), "the blocks before the first mismatch matched");

            // a prefix hit: the consumer's two blocks are the producer's last two, the mismatch is its second
            int[] tail = {30, 31, 32, 33};
            producerCache.fill(3, tail);
            params = producer.prefillFinished("tail", ids(tail));
            flipByte(producerCache, 2, tail[3], 0);
            failure = receive(consumer, "tail-d", params, mode, new int[] {40, 41}).failed.getFirst();
            assertEquals(ErrorCode.DIGEST_MISMATCH, failure.code());
            assertEquals(1, failure.firstInvalidBlock());
            assertEquals(BlockIds.of(new int[] {41}), failure.invalidBlocks());

            List<FreedRequest> freed = new ArrayList<>();
            await(() -> EngineHarness.drain(producer, freed).size() == 3, "the producer frees every request");
            await(() -> consumer.audit().idle(), "the consumer keeps nothing");
            assertEquals(3, freed.stream().filter(f -> f.reason() == FreeReason.COMPLETED || f.reason() == FreeReason.EXPIRED).count());
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aConsumerThatChecksRefusesParametersWithoutDigestsBeforeAnythingMoves(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            TestCache producerCache = harness.cache(shape, SINGLE);
            TestCache consumerCache = harness.cache(shape, SINGLE);
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b);
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, CRC32C);
            producerCache.fill(4, new int[] {1, 2});
            TransferParams params = producer.prefillFinished("r", ids(1, 2));
            assertTrue(params.digests().isNone(), "integrity is off by default");
            ReceiveFailure failure = receive(consumer, "d", params, mode, new int[] {3, 4}).failed.getFirst();
            assertEquals(ErrorCode.DIGEST_UNAVAILABLE, failure.code());
            assertTrue(failure.message().contains("sent no block digests") && failure.message().contains("integrity=crc32c on the producer"),
                    failure.message());
            assertEquals(BlockIds.of(new int[] {3, 4}), failure.invalidBlocks());
            consumerCache.checkZero(new int[] {3, 4});
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aConsumerWithIntegrityOffIgnoresDigests(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            TestCache producerCache = harness.cache(shape, SINGLE);
            TestCache consumerCache = harness.cache(shape, SINGLE);
            ProducerRank producer = harness.producer("prefill", producerCache, true, CRC32C);
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b);
            producerCache.fill(5, new int[] {1, 2});
            TransferParams params = producer.prefillFinished("r", ids(1, 2));
            assertEquals(List.of("d"), receive(consumer, "d", params, mode, new int[] {3, 4}).received);
            consumerCache.check(5, new int[] {3, 4}, 2);
        }
    }

    @Test
    void engineShapesWhoseBlocksDifferAreRefusedNotSkipped()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            List<ProducerRank> producers = new ArrayList<>();
            for (int rank = 0; rank < 2; rank++) {
                TestCache cache = harness.cache(shape, new Rank(0, 1, rank, 2));
                cache.fill(6, new int[] {1, 2});
                producers.add(harness.producer("tp2", cache, true, CRC32C));
            }
            ConsumerRank consumer = harness.consumer("decode", harness.cache(shape, SINGLE), true, CRC32C);
            TransferParams params = producers.get(0).prefillFinished("r", ids(1, 2));
            producers.get(1).prefillFinished("r", ids(1, 2));
            ReceiveFailure failure = receive(consumer, "d", params, TransferMode.PULL, new int[] {3, 4}).failed.getFirst();
            assertEquals(ErrorCode.DIGEST_UNAVAILABLE, failure.code());
            assertTrue(failure.message().contains("single-rank engines only (producer tp2 tp=2 pp=1"), failure.message());
        }
    }

    @Test
    void deviceMemoryIsRefusedWithTheFix()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache cache = harness.cache(TestCache.Shape.of(2, 16, false).onDevice(1), SINGLE);
            KvBridgeException refused = assertThrows(KvBridgeException.class,
                    () -> ConnectorSettings.builder("e", cache.geometry).integrity(Integrity.CRC32C).build());
            assertEquals(ErrorCode.CONFIG_INVALID, refused.code());
            assertTrue(refused.getMessage().contains("integrity=crc32c needs host memory but region model.layers.1.self_attn is DEVICE memory")
                    && refused.getMessage().contains("set integrity=off"), refused.getMessage());
        }
    }

    private static void flipByte(TestCache cache, int layer, int block, long offset)
    {
        long at = block * cache.rankBlockBytes + offset;
        byte old = cache.layers.get(layer).get(ValueLayout.JAVA_BYTE, at);
        cache.layers.get(layer).set(ValueLayout.JAVA_BYTE, at, (byte) ~old);
    }

    private record Outcome(List<String> received, List<ReceiveFailure> failed)
    {
    }

    private static Outcome receive(ConsumerRank consumer, String id, TransferParams params, TransferMode mode, int[] blocks)
    {
        consumer.blocksAllocated(id, params, mode, ids(blocks));
        List<String> received = new ArrayList<>();
        List<ReceiveFailure> failed = new ArrayList<>();
        await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "request " + id + " ends");
        return new Outcome(received, failed);
    }
}
