package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A streamed prefill that outlasts its request's lease, as a producer stopped mid-stream does: the
 * rank refuses the late {@code layerComputed}, and the producer host drops that prefill, counts it,
 * and goes on serving the next request instead of failing.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class PrefillCutShortTest
{
    private static final byte[] SECRET = "prefill-cut-short-test-secret-0123456".getBytes(StandardCharsets.US_ASCII);

    @Test
    void aPrefillWhoseLeaseRanOutIsDroppedAndTheNextIsServed() throws Exception
    {
        // 30 layers of 20 ms: a prefill of 600 ms against a lease of 200 ms, which runs from prefillStarted
        long leaseMillis = 200;
        DemoOptions options = new DemoOptions("local", "push", "hma", 1, 1, 1, 1, 2, 2, 1024, 1, 0, false, leaseMillis)
                .withPrefill(true, TimeUnit.MILLISECONDS.toNanos(20));
        int capacity = DemoRun.capacity(options);
        BlockPool blocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        RecordingEvents events = new RecordingEvents();
        try (EngineHost producer = new EngineHost(new HostSpec(HostSpec.PREFILL, options, capacity, List.of(0), DemoRun.freeLoopbackAddresses(1), SECRET),
                "prefill-cut-short")) {
            producer.prefill(0, 64 * DemoModel.BLOCK_TOKENS, blocks.allocate(64));
            producer.params(0);
            awaitCutShort(producer, events, 1);
            assertEquals(List.of("req-0 EXPIRED"), events.freed);

            // the host serves on: the next prefill runs, and ends the same way
            producer.prefill(1, 64 * DemoModel.BLOCK_TOKENS, blocks.allocate(64));
            producer.params(1);
            awaitCutShort(producer, events, 2);
            assertEquals(List.of("req-0 EXPIRED", "req-1 EXPIRED"), events.freed);
            Map<String, Object> audit = producer.audit();
            // each walked only the layers it computed before its refusal
            long layers = ((Number) audit.get("layersComputed")).longValue();
            assertTrue(layers >= 2 && layers < 2 * DemoModel.layerCount(DemoModel.DEFAULT), audit.toString());
        }
    }

    /** Polls the host, which must not fail, until it dropped {@code count} prefills and freed their requests. */
    private static void awaitCutShort(EngineHost producer, RecordingEvents events, long count) throws InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        // no decoder ever asks: the lease frees the request mid-prefill, and the prefill thread drops the rest of it
        while (((Number) producer.audit().get("prefillsCutShort")).longValue() < count || events.freed.size() < count) {
            producer.poll(events);
            assertTrue(System.nanoTime() < deadline, "the prefill was never cut short: " + producer.audit());
            Thread.sleep(5);
        }
    }
}
