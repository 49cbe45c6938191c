package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.kvbridge.api.PullKey;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A request's pull key is drawn for it, shared by the ranks that report it together, and not reused later. */
final class PullKeysTest
{
    private static final long LEASE = 30_000_000_000L;

    @Test
    void ranksReportingARequestTogetherShareItsKeyAndALaterUseOfTheIdGetsAnother()
    {
        AtomicLong now = new AtomicLong(1_000);
        PullKeys keys = new PullKeys(now::get);
        PullKey first = keys.of("req-1", LEASE);
        now.addAndGet(LEASE / 2);
        assertEquals(first, keys.of("req-1", LEASE), "a second rank reporting the request within its lease");
        assertNotEquals(first, keys.of("req-2", LEASE), "another request");
        now.addAndGet(LEASE + 1);
        assertNotEquals(first, keys.of("req-1", LEASE), "the id used again after its lease");
    }

    @Test
    void keysAreRandomAndForgottenOnceTheirRetentionPassed()
    {
        AtomicLong now = new AtomicLong();
        PullKeys keys = new PullKeys(now::get);
        Set<PullKey> seen = new HashSet<>();
        for (int i = 0; i < 1_000; i++) {
            seen.add(keys.of("req-" + i, 10));
        }
        assertEquals(1_000, seen.size(), "keys repeated");
        now.addAndGet(11);
        // the table is swept once it doubled since the last sweep (at 1,024 here): the expired keys go then
        for (int i = 0; i < 25; i++) {
            keys.of("late-" + i, 10);
        }
        assertEquals(25, keys.size(), "expired keys were not forgotten");
    }
}
