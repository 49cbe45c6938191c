package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
final class TransferMetricsTest
{
    @Test
    void theSummaryLineCoversOneIntervalAndTheMetersKeepEverything()
    {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        TransferMetrics metrics = new TransferMetrics(registry);
        assertNull(metrics.drainSummary(), "nothing happened");
        for (int i = 1; i <= 10; i++) {
            // 1..10 ms, 2 MB each, 100 descriptors coalesced into 4 operations
            metrics.transferDone(i * 1_000_000L, 50_000, 2_000_000, 100, 4);
        }
        metrics.transferFailed();
        metrics.notificationFailed();
        metrics.leaseExpired();
        metrics.leaseExpired();
        assertEquals("kvbridge transfers: count=10 time mean=5.500 ms p90=9.000 ms post mean=0.050 ms, 2.000 MB per transfer, 100.0 descriptors and"
                + " 4.0 operations per transfer, 0.364 GB/s, failed transfers=1, failed notifications=1, expired leases=2", metrics.drainSummary());
        assertNull(metrics.drainSummary(), "a new interval starts empty");
        assertEquals(10, registry.get("kvbridge.transfer.time").timer().count());
        assertEquals(20_000_000.0, registry.get("kvbridge.transfer.bytes").summary().totalAmount());
        assertEquals(1000.0, registry.get("kvbridge.transfer.descriptors").summary().totalAmount());
        assertEquals(40.0, registry.get("kvbridge.transfer.operations").summary().totalAmount());
        assertEquals(10, registry.get("kvbridge.transfer.operations").summary().count());
        assertEquals(2.0, registry.get("kvbridge.lease.expired").counter().count());
        assertEquals(1.0, registry.get("kvbridge.notification.failed").counter().count());
        assertEquals(1.0, registry.get("kvbridge.transfer.failed").counter().count());
    }
}
