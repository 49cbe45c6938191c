package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Handing work to an owner thread and waiting for it, with the same work object reused at once. */
@Timeout(60)
final class OwnerWorkTest
{
    private static final int MAX_ROUNDS = 200_000;
    private static final int MIN_ROUNDS = 1_000;
    private static final long ROUNDS_BUDGET_NANOS = 10_000_000_000L;

    private static final class Counted extends OwnerWork
    {
        final AtomicInteger runs = new AtomicInteger();

        @Override
        protected void runOnOwner()
        {
            runs.incrementAndGet();
        }
    }

    @Test
    void aReusedWorkObjectIsNeverLeftWaiting() throws InterruptedException
    {
        // transfer slots are reused the moment their post returns; a completion that touched the
        // object after marking it done could take the next post's wake-up and strand that caller,
        // which then waits forever and the class's timeout fails the test. Each round is two
        // wake-ups, which a loaded machine (a shared CI runner) makes slow: the rounds stop at a
        // count or a time budget, whichever comes first, so that slowness is never a failure
        long budgetEnds = System.nanoTime() + ROUNDS_BUDGET_NANOS;
        Counted work = new Counted();
        OwnerQueue queue = new OwnerQueue(4);
        AtomicBoolean stop = new AtomicBoolean();
        Thread owner = Thread.ofPlatform().daemon().start(() -> {
            while (true) {
                OwnerWork next = queue.poll();
                if (next == null) {
                    if (stop.get()) {
                        return;
                    }
                    Thread.onSpinWait();
                    continue;
                }
                next.runOnOwner();
                next.complete();
            }
        });
        int rounds = 0;
        while (rounds < MAX_ROUNDS && (rounds < MIN_ROUNDS || System.nanoTime() - budgetEnds < 0)) {
            work.prepare(Thread.currentThread());
            while (!queue.offer(work)) {
                Thread.onSpinWait();
            }
            work.await();
            rounds++;
        }
        // every round waited for its completion, so the queue is empty now
        stop.set(true);
        owner.join();
        assertEquals(rounds, work.runs.get());
    }

    @Test
    void theOwnersFailureIsRethrownToTheCaller()
    {
        Counted work = new Counted();
        KvBridgeException failure = new KvBridgeException(ErrorCode.NATIVE_ERROR, "refused");
        work.prepare(Thread.currentThread());
        Thread.ofPlatform().start(() -> {
            work.fail(failure);
            work.complete();
        });
        assertSame(failure, assertThrows(KvBridgeException.class, work::await));
    }
}
