package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.Leases;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.geometry.Rank;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The heartbeat period a consumer derives from the lease a producer's parameters name: a peer's value. */
final class HeartbeatPeriodTest
{
    @Test
    void aRequestBeatsEverySixthOfTheProducersLease()
    {
        assertEquals(5_000_000_000L, periodFor(30_000));
        assertEquals(1_000_000L, periodFor(1), "at least every millisecond");
    }

    @Test
    void aProducersHugeLeaseDoesNotWrapIntoANegativePeriod()
    {
        // Long.MAX_VALUE / 2 ms over six, in nanoseconds, exceeds a long: a wrapped period would beat on every scan
        assertEquals(Leases.LONGEST_NANOS, periodFor(Long.MAX_VALUE / 2));
        assertEquals(Leases.LONGEST_NANOS, periodFor(Long.MAX_VALUE));
    }

    private static long periodFor(long leaseMillis)
    {
        try (EngineHarness harness = new EngineHarness()) {
            ConnectorSettings settings = harness.settings("consumer", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single())).build();
            TransferParams params = new TransferParams("producer", "r", List.of(new SideChannelAddress("127.0.0.1", 1)), 1, 1, ids(1), Set.of(TransferMode.PULL),
                    leaseMillis, TransferParams.UNKNOWN_TIME, List.of(TransferParams.UNKNOWN_EPOCH));
            ReceivingRequest request = new ReceivingRequest("r", params, TransferMode.PULL, ids(1), new LayoutRules(settings), new RequestTracker(Long.MAX_VALUE, 1));
            return request.heartbeatNanos;
        }
    }
}
