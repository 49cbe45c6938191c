package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A decoder process killed while a push producer owes it writes: the producer's lease frees the
 * blocks, nothing stays held, and the producer goes on serving a new decoder process. Real UCX
 * between real processes; the producer runs in the test's JVM so its reports can be read directly.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
final class KilledDecoderTest
{
    private static final long LEASE_MILLIS = 2_000;
    private static final byte[] SECRET = "killed-decoder-test-secret-0123456789".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    @Test
    void producerLeaseFreesTheBlocksOfAKilledDecoder() throws Exception
    {
        Ucx.assumeAvailable();
        DemoOptions options = new DemoOptions("ucx", "push", "hma", 1, 1, 1, 1, 2, 2, 1024, 1, 0, true, LEASE_MILLIS);
        int capacity = DemoRun.capacity(options);
        List<SideChannelAddress> addresses = DemoRun.freeLoopbackAddresses(1);
        BlockPool producerBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        BlockPool decoderBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        int promptBlocks = 64;
        RecordingEvents events = new RecordingEvents();
        try (EngineHost producer = new EngineHost(new HostSpec(HostSpec.PREFILL, options, capacity, List.of(0), addresses, SECRET), "killed-decoder-prefill");
                ProcessHost doomed = ProcessHost.start(new HostSpec(HostSpec.DECODE, options, capacity, List.of(0), List.of(), SECRET))) {
            doomed.awaitReady();
            // a router may hand a push decoder the producer's address before the prefill finished:
            // the registration then waits at the producer, which owes the decoder its writes
            TransferParams early = new TransferParams("demo-prefill", "", addresses, 1, 1, BlockIds.empty(), EnumSet.allOf(TransferMode.class),
                    LEASE_MILLIS);
            doomed.receive(0, early, TransferMode.PUSH, promptBlocks * DemoModel.BLOCK_TOKENS, decoderBlocks.allocate(promptBlocks));
            await(() -> held(producer, "stashedRegistrations") == 1, "the decoder's registration to reach the producer");

            assertTrue(doomed.process().destroyForcibly().waitFor(30, TimeUnit.SECONDS), "the decoder process did not die");
            long killed = System.nanoTime();
            producer.prefill(0, promptBlocks * DemoModel.BLOCK_TOKENS, producerBlocks.allocate(promptBlocks));
            producer.params(0);
            await(() -> {
                producer.poll(events);
                return !events.freed.isEmpty();
            }, "the producer to free request 0");
            long freedAfterMillis = (System.nanoTime() - killed) / 1_000_000;

            assertEquals(List.of("req-0 EXPIRED"), events.freed, "a dead decoder never acknowledges: only the lease frees the blocks");
            assertTrue(freedAfterMillis < LEASE_MILLIS + 10_000, "freed " + freedAfterMillis + " ms after the kill, lease " + LEASE_MILLIS + " ms");
            Map<String, Object> audit = producer.audit();
            assertEquals(1L, ((Number) audit.get("expiredLeases")).longValue(), audit.toString());
            for (String held : List.of("requests", "inFlightTransfers", "leasesHeld", "stashedRegistrations", "retainedHandles", "transportHandles")) {
                assertEquals(0, held(producer, held), held + " after the lease expired: " + audit);
            }

            // the producer survived its peer's death: a new decoder process gets a request, every byte checked
            try (ProcessHost decoder = ProcessHost.start(new HostSpec(HostSpec.DECODE, options, capacity, List.of(0), List.of(), SECRET))) {
                decoder.awaitReady();
                int[][] ids = producerBlocks.allocate(promptBlocks);
                producer.prefill(1, promptBlocks, ids);
                decoder.receive(1, producer.params(1), TransferMode.PUSH, promptBlocks, decoderBlocks.allocate(promptBlocks));
                await(() -> {
                    decoder.poll(events);
                    producer.poll(events);
                    return events.checked.size() == 1 && events.freed.size() == 2;
                }, "request 1 to arrive at the new decoder");
                assertEquals(List.of("1 parity=0"), events.checked);
                assertEquals("req-1 COMPLETED", events.freed.get(1));
            }
        }
    }

    private static int held(EngineHost host, String key)
    {
        @SuppressWarnings("unchecked")
        Map<String, Object> idle = (Map<String, Object>) host.audit().get("idle");
        return ((Number) idle.get(key)).intValue();
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(5);
        }
    }
}
