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
    // the top bit set, as half of all drawn epochs have
    private static final long EPOCH = 0x9f86d081884c7d65L;
    private static final String HEX = "9f86d081884c7d65";

    private static Messages.Message parse(String text)
    {
        return Messages.parse(text.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void completionsSplitAtTheLastTwoColonsAndNameAnEpoch()
    {
        assertEquals(new Messages.Completion("req", 1, EPOCH), parse("req:1:" + HEX));
        assertEquals(new Messages.Completion("ns:tenant:req-7", 4, EPOCH), parse("ns:tenant:req-7:4:" + HEX));
        assertEquals(new Messages.Completion("r", 3, 1), Messages.parse(Messages.completion("r", 3, 1)));
        assertInstanceOf(Messages.Malformed.class, parse("req"));
        assertInstanceOf(Messages.Malformed.class, parse(":1:" + HEX));
        assertInstanceOf(Messages.Malformed.class, parse("req:x:" + HEX));
        assertInstanceOf(Messages.Malformed.class, parse("req:0:" + HEX));
        assertInstanceOf(Messages.Malformed.class, parse("re q:1:" + HEX));
        // the form before epochs, an epoch of another length, in upper case, or zero
        assertInstanceOf(Messages.Malformed.class, parse("req:1"));
        assertInstanceOf(Messages.Malformed.class, parse("req:1:" + HEX.substring(1)));
        assertInstanceOf(Messages.Malformed.class, parse("req:1:" + HEX.toUpperCase(java.util.Locale.ROOT)));
        assertInstanceOf(Messages.Malformed.class, parse("req:1:0000000000000000"));
    }

    @Test
    void heartbeatsKeepWellFormedIdsOnly()
    {
        assertEquals(new Messages.Heartbeat(EPOCH, List.of("req-a", "req-unknown", "req-b")), parse("HB:" + HEX + ":req-a,req-unknown,req-b"));
        assertEquals(new Messages.Heartbeat(EPOCH, List.of("a")), parse("HB:" + HEX + ":a,,b c"));
        assertEquals(new Messages.Heartbeat(EPOCH, List.of("a", "b")), Messages.parse(Messages.heartbeat(EPOCH, List.of("a", "b"))));
        assertInstanceOf(Messages.Malformed.class, parse("HB:req-a,req-b"));
        assertInstanceOf(Messages.Malformed.class, parse("HB:0000000000000000:req-a"));
    }

    @Test
    void registrationsAndPushCompletionsRoundTrip()
    {
        Messages.Registration registration = new Messages.Registration("c-1", "p-1", "decode", "127.0.0.1", 5600, 0, 1, 2, true,
                BlockIds.of(new int[] {1, 2}, new int[] {}, new int[] {7}), EPOCH, 42, new byte[] {9, 8, 7});
        assertEquals(registration, Messages.parse(Messages.registration(registration)));
        assertEquals(new Messages.PushDone("c-1", "p-1", EPOCH), Messages.parse(Messages.pushDone("c-1", "p-1", EPOCH)));
        assertInstanceOf(Messages.Malformed.class, Messages.parse(Messages.pushDone("c-1", "p-1", 0)));
        List<String> layers = List.of("model.layers.0.self_attn", "model.layers.3.mlp");
        assertEquals(new Messages.LayersLanded("c-1", "p-1", layers, EPOCH), Messages.parse(Messages.layersLanded("c-1", "p-1", layers, EPOCH)));
        assertInstanceOf(Messages.Malformed.class, Messages.parse(Messages.layersLanded("c 1", "p-1", layers, EPOCH)));
        Messages.Registration unknownConsumer = new Messages.Registration("c-1", "p-1", "decode", "127.0.0.1", 5600, 0, 1, 2, true,
                BlockIds.of(new int[] {1}), EPOCH, 0, new byte[0]);
        assertInstanceOf(Messages.Malformed.class, Messages.parse(Messages.registration(unknownConsumer)));
    }

    @Test
    void pushFailuresRoundTripAndAnUnknownCodeOrLongReasonIsTamed()
    {
        assertEquals(new Messages.PushFailed("c-1", "p-1", ErrorCode.STALE_EPOCH, "restarted", EPOCH),
                Messages.parse(Messages.pushFailed("c-1", "p-1", ErrorCode.STALE_EPOCH, "restarted", EPOCH)));
        byte[] unknown = new String(Messages.pushFailed("c-1", "p-1", ErrorCode.TRANSFER_FAILED, "x", EPOCH), java.nio.charset.StandardCharsets.ISO_8859_1)
                .replace("KVB/TransferFailed", "KVB/SomethingNewer").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        assertEquals(new Messages.PushFailed("c-1", "p-1", ErrorCode.TRANSFER_FAILED, "(KVB/SomethingNewer) x", EPOCH), Messages.parse(unknown));
        Messages.PushFailed longReason = (Messages.PushFailed) Messages.parse(Messages.pushFailed("c-1", "p-1", ErrorCode.TRANSFER_FAILED, "y".repeat(100_000),
                EPOCH));
        assertTrue(longReason.reason().length() <= 903, "reason of " + longReason.reason().length() + " characters");
        assertTrue(Messages.parse(Messages.pushFailed("c-1", "", ErrorCode.TRANSFER_FAILED, "z", EPOCH)) instanceof Messages.Malformed,
                "an empty producer request id is refused");
    }

    @Test
    void anyMutationOfARegistrationParsesOrIsMalformedNeverThrows()
    {
        byte[] valid = Messages.registration(new Messages.Registration("c-1", "", "decode", "h", 1, 0, 0, 1, false, ids(1, 2, 3), EPOCH, 7, new byte[0]));
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
