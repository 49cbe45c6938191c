package io.kvbridge.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class CompletionAggregatorTest
{
    private final AtomicLong now = new AtomicLong();

    private CompletionAggregator aggregator(int workers, int capacity)
    {
        return new CompletionAggregator(workers, capacity, 1_000, now::get);
    }

    private static ReceiveFailure failure(String id, int first, int[]... invalid)
    {
        return new ReceiveFailure(id, ErrorCode.TRANSFER_FAILED, "worker failed", BlockIds.of(invalid), FailurePolicy.RECOMPUTE, first);
    }

    @Test
    void finishesOnceWhenEveryWorkerReportedAndDuplicatesDoNotCount()
    {
        CompletionAggregator aggregator = aggregator(4, 16);
        assertNull(aggregator.report("r", 0));
        assertNull(aggregator.report("r", 0), "a duplicate from worker 0");
        assertNull(aggregator.report("r", 2));
        assertNull(aggregator.report("r", 2));
        assertNull(aggregator.report("r", 1));
        CompletionAggregator.Finished finished = aggregator.report("r", 3);
        assertNotNull(finished);
        assertEquals("r", finished.requestId());
        assertFalse(finished.failed());
        assertNull(aggregator.report("r", 3), "a late duplicate does not finish it again");
        assertNull(aggregator.report("r", 1));
    }

    @Test
    void aFailureOnAnyWorkerFinishesFailedOnceWithTheUnionOfInvalidBlocks()
    {
        CompletionAggregator aggregator = aggregator(3, 16);
        assertNull(aggregator.report("r", 0, 3, failure("r", 2, new int[] {5, 6}, new int[0])));
        assertNull(aggregator.report("r", 1, 3, null));
        CompletionAggregator.Finished finished = aggregator.report("r", 2, 3, failure("r", 1, new int[] {6, 7}, new int[] {9}));
        assertNotNull(finished);
        assertTrue(finished.failed());
        assertEquals(BlockIds.of(new int[] {5, 6, 7}, new int[] {9}), finished.failure().invalidBlocks());
        assertEquals(1, finished.failure().firstInvalidBlock(), "the earliest of the workers'");
        assertEquals(ErrorCode.TRANSFER_FAILED, finished.failure().code());
    }

    @Test
    void theExpectedCountIsPerRequest()
    {
        CompletionAggregator aggregator = aggregator(8, 16);
        // an MLA push where two of eight workers take part
        assertNull(aggregator.report("mla", 0, 2, null));
        assertNotNull(aggregator.report("mla", 5, 2, null));
        assertNull(aggregator.report("all", 0));
        assertThrows(KvBridgeException.class, () -> aggregator.report("x", 8));
        assertThrows(KvBridgeException.class, () -> aggregator.report("x", 0, 9, null));
        assertThrows(KvBridgeException.class, () -> aggregator.report("x", 0, 1, failure("y", 0, new int[0])));
    }

    @Test
    void staleEntriesAreEvictedAndTheTableIsBounded()
    {
        CompletionAggregator aggregator = aggregator(2, 2);
        aggregator.report("a", 0);
        aggregator.report("b", 0);
        KvBridgeException full = assertThrows(KvBridgeException.class, () -> aggregator.report("c", 0));
        assertEquals(ErrorCode.UNSUPPORTED, full.code());
        assertTrue(full.getMessage().contains("capacity=2"), full.getMessage());
        now.addAndGet(500);
        assertEquals(0, aggregator.evictStale(null), "nothing is past its deadline yet");
        assertNotNull(aggregator.report("b", 1), "b finishes; its entry stays as a tombstone for the retention");
        now.addAndGet(600);
        List<String> unfinished = new ArrayList<>();
        assertEquals(1, aggregator.evictStale(unfinished::add), "a is past its deadline, b's tombstone not yet");
        assertEquals(List.of("a"), unfinished);
        assertNull(aggregator.report("b", 1), "b's tombstone still swallows a late duplicate");
        assertNull(aggregator.report("c", 0), "room again");
        now.addAndGet(2_000);
        // full again: the table evicts the stale entries itself
        aggregator.report("d", 0);
        assertNull(aggregator.report("e", 0));
        assertEquals(2, aggregator.size());
    }

    @Test
    void concurrentReportsFinishEachRequestExactlyOnce() throws InterruptedException
    {
        int workers = 8;
        int requests = 2_000;
        CompletionAggregator aggregator = new CompletionAggregator(workers, requests, Long.MAX_VALUE / 4, System::nanoTime);
        ConcurrentLinkedQueue<CompletionAggregator.Finished> finished = new ConcurrentLinkedQueue<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            int worker = w;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                }
                catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
                for (int r = 0; r < requests; r++) {
                    // every worker reports every request twice; worker 3 fails every tenth
                    for (int copy = 0; copy < 2; copy++) {
                        ReceiveFailure failure = worker == 3 && r % 10 == 0 ? failure("r" + r, 0, new int[] {r}) : null;
                        CompletionAggregator.Finished done = aggregator.report("r" + r, worker, workers, failure);
                        if (done != null) {
                            finished.add(done);
                        }
                    }
                }
            }));
        }
        start.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
        assertEquals(requests, finished.size(), "one finished per request");
        assertEquals(requests, finished.stream().map(CompletionAggregator.Finished::requestId).distinct().count());
        assertEquals(requests / 10, finished.stream().filter(CompletionAggregator.Finished::failed).count());
    }
}
