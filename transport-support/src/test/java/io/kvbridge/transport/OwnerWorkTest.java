package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Handing work to an owner thread and waiting for it, with the same work object reused at once. */
@Timeout(60)
final class OwnerWorkTest
{
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
        // object after marking it done could take the next post's wake-up and strand that caller
        int rounds = 200_000;
        Counted work = new Counted();
        OwnerQueue queue = new OwnerQueue(4);
        Thread owner = Thread.ofPlatform().daemon().start(() -> {
            for (int done = 0; done < rounds;) {
                OwnerWork next = queue.poll();
                if (next == null) {
                    Thread.onSpinWait();
                    continue;
                }
                next.runOnOwner();
                next.complete();
                done++;
            }
        });
        for (int i = 0; i < rounds; i++) {
            work.prepare(Thread.currentThread());
            while (!queue.offer(work)) {
                Thread.onSpinWait();
            }
            work.await();
        }
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
