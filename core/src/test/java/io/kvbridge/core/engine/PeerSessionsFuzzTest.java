package io.kvbridge.core.engine;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.kvbridge.core.wire.NotificationSeal;
import io.kvbridge.core.wire.SessionKey;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/** Random, truncated and mutated notifications: none opens, each is counted once, nothing throws. */
final class PeerSessionsFuzzTest
{
    private static final SessionKey KEY = SessionKey.derive(new byte[0], new byte[16], new byte[16], "consumer", "p", 0, 0);

    private static long total(PeerSessions sessions)
    {
        long total = 0;
        for (PeerSessions.Rejection reason : PeerSessions.Rejection.values()) {
            total += sessions.rejected(reason);
        }
        return total;
    }

    @Property(tries = 1_000)
    void nothingButAnUntouchedSealedNotificationOpens(@ForAll @Size(max = 120) byte[] random, @ForAll @IntRange(min = 0, max = 80) int at,
            @ForAll byte value, @ForAll @IntRange(min = 1, max = 60) int cut)
    {
        PeerSessions sessions = new PeerSessions("fuzz", new TransferMetrics(new SimpleMeterRegistry()));
        sessions.established(KEY);
        NotificationSeal sender = new NotificationSeal(KEY);
        byte[] body = "PUSH_REG:anything".getBytes(US_ASCII);
        byte[] valid = sender.seal(body);
        byte[] mutated = valid.clone();
        mutated[at % mutated.length] ^= value == 0 ? 1 : value;
        byte[] truncated = Arrays.copyOf(sender.seal(body), Math.max(0, valid.length - cut));
        byte[] headerOfValid = random.clone();
        if (headerOfValid.length >= NotificationSeal.HEADER_BYTES) {
            System.arraycopy(valid, 0, headerOfValid, 0, NotificationSeal.HEADER_BYTES);
        }
        for (byte[] forged : new byte[][] {random, mutated, truncated, headerOfValid}) {
            assertNull(sessions.open("consumer", forged));
            assertNull(sessions.open("someone-else", forged));
        }
        assertEquals(8, total(sessions));
        assertArrayEquals(body, sessions.open("consumer", valid));
        assertNull(sessions.open("consumer", valid), "a replay opened");
        assertEquals(9, total(sessions));
    }
}
