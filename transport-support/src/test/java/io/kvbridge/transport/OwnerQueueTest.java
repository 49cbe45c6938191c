package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The owner's hand-over queue: order, bounds, reuse of slots, and many producers losing nothing. */
@Timeout(60)
final class OwnerQueueTest
{
    private static final class Item extends OwnerWork
    {
        final int producer;
        final int sequence;

        Item(int producer, int sequence)
        {
            this.producer = producer;
            this.sequence = sequence;
        }

        @Override
        protected void runOnOwner()
        {
        }
    }

    @Test
    void keepsOrderRefusesWhenFullAndReusesSlots()
    {
        OwnerQueue queue = new OwnerQueue(3);
        assertTrue(queue.isEmpty());
        assertNull(queue.poll());
        List<Item> items = new ArrayList<>();
        for (int lap = 0; lap < 5; lap++) {
            items.clear();
            for (int i = 0; i < 4; i++) {
                Item item = new Item(0, i);
                items.add(item);
                assertTrue(queue.offer(item), "capacity rounds 3 up to 4");
            }
            assertFalse(queue.offer(new Item(0, 99)), "a full queue refuses");
            assertFalse(queue.isEmpty());
            for (Item item : items) {
                assertSame(item, queue.poll());
            }
            assertTrue(queue.isEmpty());
        }
    }

    @Test
    void manyProducersLoseAndDuplicateNothing() throws InterruptedException
    {
        int producers = 4;
        int perProducer = 50_000;
        OwnerQueue queue = new OwnerQueue(64);
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int producer = p;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                }
                catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < perProducer; i++) {
                    Item item = new Item(producer, i);
                    while (!queue.offer(item)) {
                        Thread.onSpinWait();
                    }
                }
            }));
        }
        start.countDown();
        int[] next = new int[producers];
        Set<Long> seen = new HashSet<>();
        int received = 0;
        while (received < producers * perProducer) {
            OwnerWork work = queue.poll();
            if (work == null) {
                Thread.onSpinWait();
                continue;
            }
            Item item = (Item) work;
            assertEquals(next[item.producer]++, item.sequence, "each producer's items arrive in its order");
            assertTrue(seen.add(((long) item.producer << 32) | item.sequence));
            received++;
        }
        for (Thread thread : threads) {
            thread.join();
        }
        assertTrue(queue.isEmpty());
    }
}
