package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The stall-producer fault: the last producer stage's process is stopped in the middle request, the
 * decoder gives up on it, writes a sentinel into its blocks once they are proven safe, and the resumed
 * producer must not change it; every other request completes with every byte checked.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
final class StallFaultTest
{
    // the decoder gives up on every request after half of it: long enough for a first handshake on a loaded machine
    private static final long STALL_MILLIS = 8_000;
    // longer than the stall, so that the stopped stage resumes with the request still leased and writes late
    private static final long LEASE_MILLIS = 12_000;

    @Test
    @SuppressWarnings("unchecked")
    void theStalledRequestFailsAloneAndNoLateByteReachesItsReusedBlocks()
    {
        DemoOptions options = new DemoOptions("tcp", "push", "hma", 2, 1, 1, 1, 6, 2, 300, 7, 0, true, LEASE_MILLIS).withStallProducer(STALL_MILLIS);
        Map<String, Object> audit = new DemoRun(options, done -> {
        }).run();
        System.out.println("stall-producer audit: " + audit);

        Map<String, Object> stall = (Map<String, Object>) audit.get("stall");
        assertEquals(3, stall.get("request"), audit.toString());
        assertTrue(((String) stall.get("stopped")).startsWith("prefill stage [1]"), stall.toString());
        List<String> failures = (List<String>) stall.get("decoderFailures");
        assertFalse(failures.isEmpty(), "the decoder gave up on the stalled request: " + stall);
        assertEquals(0L, stall.get("sentinelBytesChanged"), "no byte of the stopped producer landed in the reused blocks: " + stall);
        // tcp's revoke proves the writes stopped: the blocks came back at once, nothing was quarantined
        assertEquals(List.of(), stall.get("quarantined"), stall.toString());
        assertEquals(5L, audit.get("requestsCompleted"), audit.toString());
        assertEquals(0L, audit.get("parityErrors"));
        assertEquals(0L, audit.get("bytesChangedOutsideRequests"));
        assertEquals(List.of(), audit.get("problems"));
        assertEquals(true, audit.get("idleOk"), audit.toString());
        assertEquals(true, audit.get("ok"), audit.toString());
    }
}
