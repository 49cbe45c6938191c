package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.kvbridge.api.BlockDigests;
import io.kvbridge.spi.geometry.Rank;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** What one block's digest covers, and how a rank's blocks are compared with a producer's digests. */
final class BlockDigesterTest
{
    @Test
    void aBlocksDigestCoversItsBytesInEveryRegionOfItsGroupInOrder()
    {
        try (Arena arena = Arena.ofConfined()) {
            TestCache cache = new TestCache(arena, TestCache.Shape.of(3, 8, false), Rank.single());
            cache.fill(9, new int[] {2, 5});
            BlockDigests digests = new BlockDigester(cache.geometry).digest(new int[][] {{2, 5}});
            for (int position = 0; position < 2; position++) {
                int block = position == 0 ? 2 : 5;
                CRC32C expected = new CRC32C();
                for (int layer = 0; layer < 3; layer++) {
                    expected.update(cache.layers.get(layer).asSlice(block * cache.rankBlockBytes, cache.rankBlockBytes).toArray(ValueLayout.JAVA_BYTE));
                }
                assertEquals((int) expected.getValue(), digests.get(0, position), "block " + block);
            }
            assertEquals(BlockDigester.shapeOf(cache.geometry), digests.shape());
        }
    }

    @Test
    void theFirstMismatchIsFoundAtTheProducersEndTrimmedPosition()
    {
        try (Arena arena = Arena.ofConfined()) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            TestCache producer = new TestCache(arena, shape, Rank.single());
            TestCache consumer = new TestCache(arena, shape, Rank.single());
            producer.fill(3, new int[] {1, 2, 3, 4});
            BlockDigests digests = new BlockDigester(producer.geometry).digest(new int[][] {{1, 2, 3, 4}});
            // the consumer holds the producer's last three positions, in other blocks
            consumer.fill(3, new int[] {0, 10, 11, 12});
            consumer.fill(3, new int[] {10, 11, 12, 13});
            int[] mine = {11, 12, 13};
            BlockDigester digester = new BlockDigester(consumer.geometry);
            assertEquals(shape.layers(), consumer.layers.size());
            // positions 1..3 of request 3 were written into 11, 12, 13 by the second fill
            assertEquals(-1, digester.firstMismatch(0, mine, digests, 1));
            consumer.layers.get(1).set(ValueLayout.JAVA_BYTE, 12 * consumer.rankBlockBytes + consumer.rankBlockBytes - 1, (byte) 0x55);
            assertEquals(1, digester.firstMismatch(0, mine, digests, 1));
            // compared at the wrong offset nothing matches
            assertEquals(0, digester.firstMismatch(0, new int[] {11}, digests, 0));
        }
    }

    @Test
    void comparingARequestsBlocksAllocatesNothing()
    {
        try (Arena arena = Arena.ofConfined()) {
            TestCache cache = new TestCache(arena, TestCache.Shape.of(4, 32, false), Rank.single());
            int[] blocks = {3, 4, 5, 6, 7, 8, 9, 10};
            cache.fill(2, blocks);
            BlockDigester digester = new BlockDigester(cache.geometry);
            BlockDigests digests = digester.digest(new int[][] {blocks});
            com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
            long thread = Thread.currentThread().threadId();
            int matched = 0;
            int calls = 0;
            // warm up, so that the measured loop runs compiled code
            for (int i = 0; i < 20_000; i++) {
                matched += digester.firstMismatch(0, blocks, digests, 0) == -1 ? 1 : 0;
                calls++;
            }
            // the least of several rounds: an allocation per call shows in every round, a late compilation in one
            long allocated = Long.MAX_VALUE;
            for (int round = 0; round < 10 && allocated > 0; round++) {
                long before = threads.getThreadAllocatedBytes(thread);
                for (int i = 0; i < 20_000; i++) {
                    matched += digester.firstMismatch(0, blocks, digests, 0) == -1 ? 1 : 0;
                }
                calls += 20_000;
                allocated = Math.min(allocated, threads.getThreadAllocatedBytes(thread) - before);
            }
            assertEquals(calls, matched, "every block matched every time");
            assertEquals(0, allocated, "bytes allocated by 20000 comparisons of 8 blocks of 4 layers, least of the rounds");
        }
    }

    @Test
    void theShapeIgnoresAddressesAndCapacityButNotBlockBytesOrLayers()
    {
        try (Arena arena = Arena.ofConfined()) {
            int shape = BlockDigester.shapeOf(new TestCache(arena, TestCache.Shape.of(2, 16, false), Rank.single()).geometry);
            assertEquals(shape, BlockDigester.shapeOf(new TestCache(arena, TestCache.Shape.of(2, 64, false), Rank.single()).geometry));
            assertNotEquals(shape, BlockDigester.shapeOf(new TestCache(arena, TestCache.Shape.of(3, 16, false), Rank.single()).geometry));
            assertNotEquals(shape, BlockDigester.shapeOf(new TestCache(arena, TestCache.Shape.of(2, 16, false), new Rank(0, 1, 0, 2)).geometry));
        }
    }
}
