package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.Integrity;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The corrupt:N fault: block digests refuse exactly the changed requests; without them the parity check counts the changed bytes. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class CorruptionFaultTest
{
    @ParameterizedTest
    @ValueSource(strings = {"push", "pull"})
    void digestsRefuseExactlyTheChangedRequestsAndTheParityCheckCatchesThemWithout(String mode)
    {
        Map<String, Object> on = new DemoRun(options(mode, Integrity.CRC32C), done -> {
        }).run();
        assertEquals(true, on.get("ok"), on.toString());
        assertEquals(Map.of("fault", "corrupt:4", "requestsCorrupted", 3, "refusedByDigest", 3L), on.get("corruption"));
        assertEquals(9L, on.get("requestsCompleted"));
        assertEquals(0L, on.get("parityErrors"));
        assertEquals(List.of(), on.get("problems"));

        Map<String, Object> off = new DemoRun(options(mode, Integrity.OFF), done -> {
        }).run();
        assertEquals(false, off.get("ok"), "the changed bytes arrived as data");
        assertEquals(12L, off.get("requestsCompleted"));
        assertEquals(3L, off.get("parityErrors"), "one changed byte per corrupted request");
    }

    private static DemoOptions options(String mode, Integrity integrity)
    {
        DemoOptions plain = new DemoOptions("local", mode, "hma", 1, 1, 1, 1, 12, 4, 300, 7, 0, false, 30_000);
        return new DemoOptions(plain.backend(), plain.mode(), plain.layout(), 1, 1, 1, 1, plain.requests(), plain.concurrency(), plain.maxTokens(),
                plain.seed(), plain.idleMillis(), false, plain.leaseMillis(), plain.producerCache(), plain.consumerCache(), plain.cacheDevice(),
                plain.discovery(), false, plain.transportOptions(), integrity, 4);
    }
}
