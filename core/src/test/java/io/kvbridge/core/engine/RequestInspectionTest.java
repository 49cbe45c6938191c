package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.RequestState;
import io.kvbridge.api.RequestView;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.spi.geometry.Rank;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Per-request introspection: the states a request passes through on both roles, and a polled inspect that allocates nothing. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class RequestInspectionTest
{
    private static final TestCache.Shape SHAPE = TestCache.Shape.of(2, 16, false);

    @Test
    void aPullRequestIsHeldCompletedThenForgottenOnceItsReportIsPolled()
    {
        AtomicLong nanos = new AtomicLong(1_000_000_000L);
        SideChannelClock clock = SideChannelClock.of(nanos::get, java.time.InstantSource.system());
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("prefill", harness.cache(SHAPE, Rank.single()), false,
                    b -> b.leaseDuration(Duration.ofSeconds(10)));
            ConsumerRank consumer = harness.consumer("decode", harness.cache(SHAPE, Rank.single()), false, b -> b);
            RequestView view = new RequestView();
            assertFalse(producer.inspect("r", view), "unknown before prefillFinished");

            TransferParams params = producer.prefillFinished("r", ids(1, 2, 3));
            assertTrue(producer.inspect("r", view));
            assertEquals(RequestState.PENDING, view.state(), "the worker has not run the command yet");
            producer.runtime().step();
            assertTrue(producer.inspect("r", view));
            assertEquals(RequestState.HELD, view.state());
            assertEquals(1_000_000_000L + Duration.ofSeconds(10).toNanos(), view.deadlineNanos(), "the lease deadline");
            assertEquals(3, view.blocks());
            assertEquals(0, view.notificationsSeen());

            consumer.blocksAllocated("d", params, TransferMode.PULL, ids(4, 5, 6));
            assertTrue(consumer.inspect("d", view));
            assertEquals(RequestState.PENDING, view.state());
            assertEquals(3, view.blocks());
            EngineHarness.stepUntil(() -> producer.inspect("r", view) && view.state() == RequestState.COMPLETED, "completed", producer, consumer);
            assertEquals(1, view.notificationsSeen());
            assertEquals(1, view.notificationsExpected());
            assertTrue(consumer.inspect("d", view));
            assertEquals(RequestState.COMPLETED, view.state(), "consumer received");
            assertEquals(1, view.notificationsSeen(), "its one READ done");

            assertEquals(List.of("d"), consumer.poll().received());
            assertFalse(consumer.inspect("d", view), "forgotten once reported");
            assertEquals(List.of(new FreedRequest("r", FreeReason.COMPLETED)), producer.poll());
            assertFalse(producer.inspect("r", view), "forgotten once reported");
        }
    }

    @Test
    void anExpiredLeaseShowsExpiredUntilPolled()
    {
        AtomicLong nanos = new AtomicLong(1_000_000_000L);
        SideChannelClock clock = SideChannelClock.of(nanos::get, java.time.InstantSource.system());
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("prefill", harness.cache(SHAPE, Rank.single()), false, b -> b.leaseDuration(Duration.ofSeconds(1)));
            producer.prefillFinished("r", ids(1));
            producer.runtime().step();
            nanos.addAndGet(Duration.ofSeconds(2).toNanos());
            producer.runtime().step();
            RequestView view = new RequestView();
            assertTrue(producer.inspect("r", view));
            assertEquals(RequestState.EXPIRED, view.state());
            assertEquals(List.of(new FreedRequest("r", FreeReason.EXPIRED)), producer.poll());
            assertFalse(producer.inspect("r", view));
        }
    }

    @Test
    void pollingInspectAllocatesNothing()
    {
        try (EngineHarness harness = new EngineHarness()) {
            ProducerRank producer = harness.producer("prefill", harness.cache(SHAPE, Rank.single()), true, b -> b);
            ConsumerRank consumer = harness.consumer("decode", harness.cache(SHAPE, Rank.single()), false, b -> b);
            TransferParams params = producer.prefillFinished("r", ids(1, 2));
            consumer.blocksAllocated("d", params, TransferMode.PULL, ids(3, 4));
            RequestView view = new RequestView();
            await(() -> producer.inspect("r", view) && view.state() == RequestState.HELD, "held");
            com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long thread = Thread.currentThread().threadId();
            boolean known = true;
            // warm up, so that the measured loop runs compiled code
            for (int i = 0; i < 20_000; i++) {
                known &= producer.inspect("r", view) & consumer.inspect("d", view) & !producer.inspect("missing", view);
            }
            // the least of several rounds: a per-call allocation shows in every round (at least
            // 16 bytes x 300,000 calls), one-off noise such as a late compilation in none but one
            long allocated = Long.MAX_VALUE;
            for (int round = 0; round < 10 && allocated > 0; round++) {
                long before = threads.getThreadAllocatedBytes(thread);
                for (int i = 0; i < 100_000; i++) {
                    known &= producer.inspect("r", view) & consumer.inspect("d", view) & !producer.inspect("missing", view);
                }
                allocated = Math.min(allocated, threads.getThreadAllocatedBytes(thread) - before);
            }
            assertTrue(known);
            assertEquals(0, allocated, "bytes allocated by 300000 inspect calls, least of the rounds");
        }
    }
}
