package io.kvbridge.core.sidechannel;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.kvbridge.core.wire.RankMetadata;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * The handshakes of many ranks on one host reach a side channel whose connection threads are held
 * up, as on a busy machine: every connection comes from 127.0.0.1 and waits, pending, with its
 * request already sent. None of them is displaced, and nothing is logged as a refusal.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class SideChannelOneHostTest
{
    // six processes of eight ranks each: more than the default share of one source address (32)
    private static final int RANKS = 48;
    private static final byte[] SECRET = "a-shared-secret-of-32-bytes-long".getBytes(US_ASCII);

    @Test
    void ranksOfOneHostWaitingTogetherAreServedWithoutDisplacementOrWarning()
            throws Exception
    {
        Logger logger = (Logger) LoggerFactory.getLogger(SideChannelServer.class);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        List<RankMetadata> ranks = SideChannelFixtures.engine("prefill-0", 1, 1);
        SideChannelSettings settings = SideChannelSettings.builder().secret(SECRET).build();
        AtomicBoolean release = new AtomicBoolean();
        List<Thread> spinners = new ArrayList<>();
        List<Thread> clients = new ArrayList<>();
        try (SideChannelServer server = SideChannelServer.start("prefill-0", ranks, settings, SideChannelClock.system())) {
            SideChannelClient client = new SideChannelClient(settings, SideChannelClock.system());
            // warm both paths up while the connection threads still run
            client.fetch(server.address(), List.of(new RankKey(0, 0)));
            // hold every carrier of the virtual threads that serve connections, as other work on a busy machine does
            int carriers = Integer.getInteger("jdk.virtualThreadScheduler.parallelism", Runtime.getRuntime().availableProcessors());
            AtomicInteger spinning = new AtomicInteger();
            for (int i = 0; i < carriers; i++) {
                spinners.add(Thread.ofVirtual().start(() -> {
                    spinning.incrementAndGet();
                    while (!release.get()) {
                        Thread.onSpinWait();
                    }
                }));
            }
            waitFor(() -> spinning.get() == carriers, "the carriers were not all taken");
            Queue<String> failures = new ConcurrentLinkedQueue<>();
            long acceptedBefore = server.connectionsAccepted();
            for (int i = 0; i < RANKS; i++) {
                clients.add(Thread.ofPlatform().start(() -> {
                    try {
                        client.fetch(server.address(), List.of(new RankKey(0, 0)));
                    }
                    catch (RuntimeException e) {
                        failures.add(e.getMessage());
                    }
                }));
            }
            waitFor(() -> server.connectionsAccepted() - acceptedBefore >= RANKS, "the server did not accept every rank's connection");
            int waiting = server.pendingConnections();
            release.set(true);
            for (Thread thread : clients) {
                thread.join();
            }
            List<String> warnings = appender.list.stream().filter(event -> event.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage).toList();
            assertEquals(List.of(), List.copyOf(failures));
            assertEquals(RANKS, waiting, "connections waiting for their first request while the connection threads were held up");
            assertEquals(0, server.connectionsDisplaced(), "displaced; the server logged " + warnings);
            assertEquals(List.of(), warnings);
            assertEquals(RANKS + 1, server.requestsServed());
        }
        finally {
            release.set(true);
            logger.detachAppender(appender);
        }
    }

    private static void waitFor(java.util.function.BooleanSupplier condition, String failure)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() - deadline < 0, failure);
            Thread.sleep(10);
        }
    }
}
