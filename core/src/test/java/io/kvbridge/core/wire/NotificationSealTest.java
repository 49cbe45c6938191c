package io.kvbridge.core.wire;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.NotificationSeal.Verdict;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

final class NotificationSealTest
{
    private static final byte[] SECRET = "a-shared-secret-of-32-bytes-long".getBytes(US_ASCII);
    private static final byte[] CLIENT_NONCE = new byte[16];
    private static final byte[] SERVER_NONCE = new byte[16];

    static {
        Arrays.fill(SERVER_NONCE, (byte) 7);
    }

    private static SessionKey key(byte[] secret, String agent)
    {
        return SessionKey.derive(secret, CLIENT_NONCE, SERVER_NONCE, agent, "prefill", 0, 1);
    }

    @Test
    void bothSidesDeriveTheSameSessionAndEveryInputChangesIt()
    {
        SessionKey key = key(SECRET, "decode-consumer-pp0-tp0-1");
        assertEquals(key, key(SECRET, "decode-consumer-pp0-tp0-1"));
        List<SessionKey> others = List.of(key(new byte[0], "decode-consumer-pp0-tp0-1"), key(SECRET, "decode-consumer-pp0-tp0-2"),
                SessionKey.derive(SECRET, SERVER_NONCE, CLIENT_NONCE, "decode-consumer-pp0-tp0-1", "prefill", 0, 1),
                SessionKey.derive(SECRET, CLIENT_NONCE, SERVER_NONCE, "decode-consumer-pp0-tp0-1", "prefill", 1, 0),
                SessionKey.derive(SECRET, CLIENT_NONCE, SERVER_NONCE, "decode-consumer-pp0-tp0-1", "prefill-2", 0, 1));
        for (SessionKey other : others) {
            assertNotEquals(key.sessionId(), other.sessionId(), other.toString());
            assertFalse(Arrays.equals(key.key(), other.key()), other.toString());
        }
        assertFalse(key.toString().contains(Arrays.toString(key.key())), "the key stays out of logs");
    }

    @Test
    void opensWhatItsPeerSealedOnceAndRefusesReplaysAndOtherKeys()
    {
        NotificationSeal sender = new NotificationSeal(key(SECRET, "c"));
        NotificationSeal receiver = new NotificationSeal(key(SECRET, "c"));
        byte[] sealed = sender.seal("req-1:1".getBytes(US_ASCII));
        assertTrue(NotificationSeal.isSealed(sealed));
        assertEquals(sender.sessionId(), NotificationSeal.sessionIdOf(sealed));
        assertEquals(Verdict.ACCEPTED, receiver.open(sealed));
        assertArrayEquals("req-1:1".getBytes(US_ASCII), Arrays.copyOfRange(sealed, NotificationSeal.bodyOffset(),
                NotificationSeal.bodyOffset() + NotificationSeal.bodyLength(sealed)));
        assertEquals(Verdict.REPLAYED, receiver.open(sealed));
        assertEquals(Verdict.BAD_MAC, new NotificationSeal(key("another-secret-of-32-bytes-long!".getBytes(US_ASCII), "c")).open(sealed));
        for (int i = 0; i < sealed.length; i++) {
            byte[] altered = sealed.clone();
            altered[i] ^= 1;
            Verdict verdict = NotificationSeal.isSealed(altered) ? receiver.open(altered) : Verdict.BAD_MAC;
            assertEquals(Verdict.BAD_MAC, verdict, "flipped bit in byte " + i);
        }
        assertFalse(NotificationSeal.isSealed("req-1:1".getBytes(US_ASCII)), "a plain notification is not sealed");
        assertFalse(NotificationSeal.isSealed(Arrays.copyOf(sealed, NotificationSeal.HEADER_BYTES + NotificationSeal.MAC_BYTES - 1)));
    }

    @Test
    void acceptsReorderingWithinTheWindowAndRefusesWhatFellBehindIt()
    {
        NotificationSeal sender = new NotificationSeal(key(SECRET, "c"));
        NotificationSeal receiver = new NotificationSeal(key(SECRET, "c"));
        List<byte[]> sealed = new ArrayList<>();
        for (int i = 0; i < 3 * NotificationSeal.REPLAY_WINDOW; i++) {
            sealed.add(sender.seal(("m" + i).getBytes(US_ASCII)));
        }
        // the first window shuffled: each arrives once, in any order
        List<byte[]> first = new ArrayList<>(sealed.subList(0, NotificationSeal.REPLAY_WINDOW));
        Collections.shuffle(first, new Random(42));
        for (byte[] message : first) {
            assertEquals(Verdict.ACCEPTED, receiver.open(message));
        }
        for (byte[] message : first) {
            assertEquals(Verdict.REPLAYED, receiver.open(message));
        }
        // a jump far ahead: everything more than a window behind it is refused, the rest of the window is still open
        assertEquals(Verdict.ACCEPTED, receiver.open(sealed.getLast()));
        assertEquals(Verdict.REPLAYED, receiver.open(sealed.get(2 * NotificationSeal.REPLAY_WINDOW - 1)));
        assertEquals(Verdict.ACCEPTED, receiver.open(sealed.get(2 * NotificationSeal.REPLAY_WINDOW + 1)));
        assertEquals(Verdict.REPLAYED, receiver.open(sealed.get(2 * NotificationSeal.REPLAY_WINDOW + 1)));
    }

    @Property(tries = 500)
    void randomAndMutatedBytesNeverOpen(@ForAll @Size(max = 96) byte[] random, @ForAll @IntRange(min = 0, max = 60) int at, @ForAll byte value)
    {
        NotificationSeal receiver = new NotificationSeal(key(SECRET, "c"));
        byte[] forged = random.clone();
        if (forged.length >= NotificationSeal.HEADER_BYTES + NotificationSeal.MAC_BYTES) {
            forged[0] = 0;
            forged[1] = 'K';
            forged[2] = 'N';
            forged[3] = 1;
        }
        assertFalse(NotificationSeal.isSealed(forged) && receiver.open(forged) == Verdict.ACCEPTED);
        byte[] mutated = new NotificationSeal(key(SECRET, "c")).seal("HB:req-1,req-2".getBytes(US_ASCII));
        byte original = mutated[at % mutated.length];
        mutated[at % mutated.length] = value;
        boolean changed = original != value;
        if (changed && NotificationSeal.isSealed(mutated)) {
            assertEquals(Verdict.BAD_MAC, receiver.open(mutated));
        }
    }

    @Property(tries = 200)
    void itsMacIsHmacSha256(@ForAll @Size(max = 300) byte[] message)
            throws Exception
    {
        SessionKey key = SessionKey.derive(SECRET, SessionKey.newNonce(), SessionKey.newNonce(), "c", "p", 0, 0);
        Mac reference = Mac.getInstance("HmacSHA256");
        reference.init(new SecretKeySpec(key.key(), "HmacSHA256"));
        assertArrayEquals(reference.doFinal(message), new NotificationSeal(key).hmac(message));
    }

    @Test
    void opensWithoutAllocating()
    {
        NotificationSeal sender = new NotificationSeal(key(SECRET, "c"));
        NotificationSeal receiver = new NotificationSeal(key(SECRET, "c"));
        byte[][] sealed = new byte[20_000][];
        for (int i = 0; i < sealed.length; i++) {
            sealed[i] = sender.seal("req-12345678:1".getBytes(US_ASCII));
        }
        for (int i = 0; i < 10_000; i++) {
            receiver.open(sealed[i]);
        }
        long before = AllocationMeter.allocatedBytes();
        for (int i = 10_000; i < sealed.length; i++) {
            receiver.open(sealed[i]);
        }
        long perMessage = (AllocationMeter.allocatedBytes() - before) / 10_000;
        assertTrue(perMessage < 8, "opening allocated " + perMessage + " bytes per notification");
    }
}
