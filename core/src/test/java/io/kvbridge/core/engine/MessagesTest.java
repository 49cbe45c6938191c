package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import io.kvbridge.api.BlockIds;
import io.kvbridge.spi.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
final class MessagesTest
{
    private static Messages.Message parse(String text)
    {
        return Messages.parse(text.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void completionsSplitAtTheLastColon()
    {
        assertEquals(new Messages.Completion("req", 1), parse("req:1"));
        assertEquals(new Messages.Completion("ns:tenant:req-7", 4), parse("ns:tenant:req-7:4"));
        assertInstanceOf(Messages.Malformed.class, parse("req"));
        assertInstanceOf(Messages.Malformed.class, parse(":1"));
        assertInstanceOf(Messages.Malformed.class, parse("req:x"));
        assertInstanceOf(Messages.Malformed.class, parse("req:0"));
        assertInstanceOf(Messages.Malformed.class, parse("re q:1"));
    }

    @Test
    void heartbeatsKeepWellFormedIdsOnly()
    {
        assertEquals(new Messages.Heartbeat(List.of("req-a", "req-unknown", "req-b")), parse("HB:req-a,req-unknown,req-b"));
        assertEquals(new Messages.Heartbeat(List.of("a")), parse("HB:a,,b c"));
        assertEquals(new Messages.Heartbeat(List.of("a", "b")), Messages.parse(Messages.heartbeat(List.of("a", "b"))));
    }

    @Test
    void registrationsAndPushCompletionsRoundTrip()
    {
        Messages.Registration registration = new Messages.Registration("c-1", "p-1", "decode", "127.0.0.1", 5600, 0, 1, 2, true,
                BlockIds.of(new int[] {1, 2}, new int[] {}, new int[] {7}), new byte[] {9, 8, 7});
        assertEquals(registration, Messages.parse(Messages.registration(registration)));
        assertEquals(new Messages.PushDone("c-1", "p-1"), Messages.parse(Messages.pushDone("c-1", "p-1")));
    }

    @Test
    void pushFailuresRoundTripAndAnUnknownCodeOrLongReasonIsTamed()
    {
        assertEquals(new Messages.PushFailed("c-1", "p-1", ErrorCode.ROUTING_FAILED, "layer 7 missing"),
                Messages.parse(Messages.pushFailed("c-1", "p-1", ErrorCode.ROUTING_FAILED, "layer 7 missing")));
        byte[] unknown = new String(Messages.pushFailed("c-1", "p-1", ErrorCode.TRANSFER_FAILED, "x"), java.nio.charset.StandardCharsets.ISO_8859_1)
                .replace("KVB/TransferFailed", "KVB/SomethingNewer").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        assertEquals(new Messages.PushFailed("c-1", "p-1", ErrorCode.TRANSFER_FAILED, "(KVB/SomethingNewer) x"), Messages.parse(unknown));
        Messages.PushFailed longReason = (Messages.PushFailed) Messages.parse(Messages.pushFailed("c-1", "p-1", ErrorCode.TRANSFER_FAILED, "y".repeat(100_000)));
        assertTrue(longReason.reason().length() <= 903, "reason of " + longReason.reason().length() + " characters");
        assertTrue(Messages.parse(Messages.pushFailed("c-1", "", ErrorCode.TRANSFER_FAILED, "z")) instanceof Messages.Malformed,
                "an empty producer request id is refused");
    }

    @Test
    void anyMutationOfARegistrationParsesOrIsMalformedNeverThrows()
    {
        byte[] valid = Messages.registration(new Messages.Registration("c-1", "", "decode", "h", 1, 0, 0, 1, false, ids(1, 2, 3), new byte[0]));
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < 5_000; i++) {
            byte[] mutated = Arrays.copyOf(valid, random.nextInt(valid.length + 8));
            for (int flips = random.nextInt(4); flips >= 0 && mutated.length > 0; flips--) {
                mutated[random.nextInt(mutated.length)] = (byte) random.nextInt(256);
            }
            Messages.parse(mutated);
        }
        assertInstanceOf(Messages.Malformed.class, Messages.parse("PUSH_REG:".getBytes(StandardCharsets.US_ASCII)));
    }
}
