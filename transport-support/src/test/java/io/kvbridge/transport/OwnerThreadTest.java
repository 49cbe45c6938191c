package io.kvbridge.transport;

import static io.kvbridge.transport.TransferTableTest.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
final class OwnerThreadTest
{
    private volatile boolean stop;
    private OwnerThread owner;

    private void startParkingLoop()
    {
        owner = new OwnerThread("test-owner", "test transport 'a'", 8, () -> {
            while (!stop) {
                if (owner.runQueued(64) == 0 && !owner.hasQueued()) {
                    LockSupport.parkNanos(1_000_000);
                }
            }
        }, () -> owner.unpark());
        owner.start();
    }

    @Test
    void callsRunOnTheOwnerAndCarryResultsAndFailuresBack()
    {
        startParkingLoop();
        assertSame(owner.thread(), owner.call(Thread::currentThread));
        KvBridgeException refused = new KvBridgeException(ErrorCode.NATIVE_ERROR, "refused");
        assertSame(refused, assertThrows(KvBridgeException.class, () -> owner.call(() -> {
            throw refused;
        })));
        assertEquals(42, owner.call(() -> owner.call(() -> 42)), "a call from the owner itself runs at once");
        assertTrue(owner.problem().isEmpty());
        stop = true;
        assertTrue(owner.join(10_000));
    }

    @Test
    void runUnlessStoppedRunsOnTheOwnerUntilItStops()
    {
        startParkingLoop();
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        assertTrue(owner.runUnlessStopped(() -> ranOn.set(Thread.currentThread())));
        assertSame(owner.thread(), ranOn.get());
        KvBridgeException refused = new KvBridgeException(ErrorCode.NATIVE_ERROR, "refused");
        assertSame(refused, assertThrows(KvBridgeException.class, () -> owner.runUnlessStopped(() -> {
            throw refused;
        })), "what the action throws is not taken for a stopped owner");
        stop = true;
        assertTrue(owner.join(10_000));
        ranOn.set(null);
        assertFalse(owner.runUnlessStopped(() -> ranOn.set(Thread.currentThread())));
        assertNull(ranOn.get(), "a stopped owner runs nothing");
    }

    @Test
    void workQueuedAfterTheLoopEndsFailsClosedInsteadOfWaiting() throws InterruptedException
    {
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<OwnerThread> self = new AtomicReference<>();
        owner = new OwnerThread("test-owner", "test transport 'a'", 8, () -> {
            try {
                release.await(30, TimeUnit.SECONDS);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            // leaves without running what was queued
        }, () -> { });
        self.set(owner);
        owner.start();
        AtomicReference<Throwable> waiting = new AtomicReference<>();
        Thread caller = Thread.ofPlatform().start(() -> {
            try {
                self.get().call(() -> 1);
            }
            catch (Throwable e) {
                waiting.set(e);
            }
        });
        Thread.sleep(50);
        release.countDown();
        caller.join(10_000);
        assertEquals(ErrorCode.CLOSED, ((KvBridgeException) waiting.get()).code());
        assertCode(ErrorCode.CLOSED, () -> owner.call(() -> 2));
        assertTrue(owner.problem().orElseThrow().contains("has stopped"));
    }

    @Test
    void submittedWorkTheOwnerNeverRanIsAbandonedWithTheCause() throws InterruptedException
    {
        CountDownLatch release = new CountDownLatch(1);
        owner = new OwnerThread("test-owner", "test transport 'a'", 8, () -> {
            try {
                release.await(30, TimeUnit.SECONDS);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, () -> { });
        owner.start();
        AtomicReference<RuntimeException> abandoned = new AtomicReference<>();
        OwnerWork work = new OwnerWork()
        {
            @Override
            protected void runOnOwner()
            {
                throw new AssertionError("never runs");
            }

            @Override
            protected void abandoned(RuntimeException cause)
            {
                abandoned.set(cause);
            }
        };
        owner.submit(work);
        release.countDown();
        assertTrue(owner.join(10_000));
        assertEquals(ErrorCode.CLOSED, ((KvBridgeException) abandoned.get()).code());
    }

    @Test
    void aLoopThatThrowsIsReportedAsAProblem()
    {
        owner = new OwnerThread("test-owner", "test transport 'a'", 8, () -> {
            throw new IllegalStateException("native worker broke");
        }, () -> { });
        owner.start();
        assertTrue(owner.join(10_000));
        String problem = owner.problem().orElseThrow();
        assertTrue(problem.contains("native worker broke") && problem.contains("test transport 'a'"), problem);
    }

    @Test
    void aCallThatOutlastsItsTimeoutFailsNamingWhereTheOwnerIsAndTheOwnerGoesOn() throws InterruptedException
    {
        startParkingLoop();
        CountDownLatch stuck = new CountDownLatch(1);
        long started = System.nanoTime();
        KvBridgeException late = assertThrows(KvBridgeException.class, () -> owner.call(() -> {
            awaitQuietly(stuck);
            return "finished late";
        }, TimeUnit.MILLISECONDS.toNanos(200), "the native shutdown"));
        assertEquals(ErrorCode.DEADLINE_EXCEEDED, late.code());
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertTrue(waitedMillis >= 200 && waitedMillis < 5_000, "waited " + waitedMillis + " ms for a 200 ms timeout");
        String message = late.getMessage();
        assertTrue(message.contains("test transport 'a'") && message.contains("the native shutdown") && message.contains("200 ms")
                && message.contains("test-owner") && message.contains("awaitQuietly"), message);
        // the stuck action ends later; the owner then serves calls again
        stuck.countDown();
        assertEquals(7, owner.call(() -> 7, TimeUnit.SECONDS.toNanos(10), "a call"));
        stop = true;
        assertTrue(owner.join(10_000));
    }

    private static void awaitQuietly(CountDownLatch latch)
    {
        try {
            latch.await(30, TimeUnit.SECONDS);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
