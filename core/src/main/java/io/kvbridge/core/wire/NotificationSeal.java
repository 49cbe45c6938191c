package io.kvbridge.core.wire;

import static java.util.Objects.requireNonNull;

import java.security.DigestException;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * One notification session's seal: wraps each notification a client rank sends to a server rank
 * with the session id, a sequence number and a MAC, and checks them on the server rank, refusing a
 * sequence number it accepted before. Notifications of one session may arrive out of order (a
 * completion rides on a READ that can take longer than the heartbeats sent after it, and transports
 * deliver from several threads), so the receiver keeps a window of the last
 * {@value #REPLAY_WINDOW} sequence numbers rather than requiring them in order.
 *
 * <pre>
 *   0x00 'K' 'N' 0x01 | session id (8, big endian) | sequence (8, big endian) | body | MAC (16)
 *   MAC = first 16 bytes of HMAC-SHA256(session key, header || body)
 * </pre>
 *
 * <p>Not thread safe: one thread (the rank's worker) seals and opens. Sealing allocates only the
 * sealed message, opening allocates nothing.
 */
public final class NotificationSeal
{
    /** Bytes before the body. */
    public static final int HEADER_BYTES = 20;
    /** Bytes of the truncated MAC after the body. */
    public static final int MAC_BYTES = 16;
    /** How far behind the newest accepted sequence number a notification may arrive. */
    public static final int REPLAY_WINDOW = 4096;

    // a plain notification starts with a request id or an ASCII prefix, never with a NUL byte
    private static final byte[] MAGIC = {0x00, 'K', 'N', 0x01};
    private static final int BLOCK_BYTES = 64;
    private static final int DIGEST_BYTES = 32;

    /** What opening a notification found. */
    public enum Verdict
    {
        /** The MAC verified and the sequence number is new. */
        ACCEPTED,
        /** The MAC does not verify: another key, or altered bytes. */
        BAD_MAC,
        /** The sequence number was accepted before, or lies behind the window. */
        REPLAYED,
    }

    private final long sessionId;
    private final String peerAgent;
    // HMAC-SHA256 (RFC 2104) on two digests: javax.crypto.Mac allocates its result on every doFinal
    private final MessageDigest inner;
    private final MessageDigest outer;
    private final byte[] innerPad = new byte[BLOCK_BYTES];
    private final byte[] outerPad = new byte[BLOCK_BYTES];
    private final byte[] macOut = new byte[DIGEST_BYTES];
    private final long[] window = new long[REPLAY_WINDOW / Long.SIZE];
    private long nextSequence = 1;
    private long highest;
    private long lastUse;

    /**
     * Creates the seal of one session, its sequence numbers starting at zero.
     *
     * @param key the session's key.
     */
    public NotificationSeal(SessionKey key)
    {
        requireNonNull(key, "key is null");
        this.sessionId = key.sessionId();
        this.peerAgent = key.clientAgent();
        try {
            this.inner = MessageDigest.getInstance("SHA-256");
            this.outer = MessageDigest.getInstance("SHA-256");
        }
        catch (GeneralSecurityException e) {
            // every Java platform must provide SHA-256
            throw new IllegalStateException("SHA-256 is not available", e);
        }
        // the session key is 32 bytes, shorter than a block: it is zero-padded, never hashed first
        byte[] secret = key.key();
        for (int i = 0; i < BLOCK_BYTES; i++) {
            byte k = i < secret.length ? secret[i] : 0;
            innerPad[i] = (byte) (k ^ 0x36);
            outerPad[i] = (byte) (k ^ 0x5c);
        }
    }

    /** {@return the session id} */
    public long sessionId()
    {
        return sessionId;
    }

    /** {@return the client rank's agent name: the only sender whose notifications this session opens} */
    public String peerAgent()
    {
        return peerAgent;
    }

    /**
     * Computes the full HMAC-SHA256 of bytes with this session's key, for tests that compare it with
     * the platform's.
     */
    byte[] hmac(byte[] message)
    {
        computeMac(message, message.length);
        return macOut.clone();
    }

    /** {@return the use stamp last given to {@link #touch}; 0 when the session never opened a notification} */
    public long lastUse()
    {
        return lastUse;
    }

    /**
     * Records a use, for choosing which session to forget when a table is full.
     *
     * @param stamp a number that grows with time.
     */
    public void touch(long stamp)
    {
        lastUse = stamp;
    }

    /**
     * Seals a notification with the next sequence number.
     *
     * @param body the notification.
     * @return the sealed bytes.
     */
    public byte[] seal(byte[] body)
    {
        byte[] sealed = new byte[HEADER_BYTES + body.length + MAC_BYTES];
        System.arraycopy(MAGIC, 0, sealed, 0, MAGIC.length);
        putLong(sealed, 4, sessionId);
        putLong(sealed, 12, nextSequence++);
        System.arraycopy(body, 0, sealed, HEADER_BYTES, body.length);
        computeMac(sealed, HEADER_BYTES + body.length);
        System.arraycopy(macOut, 0, sealed, HEADER_BYTES + body.length, MAC_BYTES);
        return sealed;
    }

    /**
     * Tells whether bytes have the shape of a sealed notification (magic and room for header and MAC).
     *
     * @param message untrusted bytes.
     * @return true when {@link #sessionIdOf} and {@link #open} may be asked.
     */
    public static boolean isSealed(byte[] message)
    {
        if (message.length < HEADER_BYTES + MAC_BYTES) {
            return false;
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (message[i] != MAGIC[i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * Reads the session id a sealed notification names.
     *
     * @param sealed bytes for which {@link #isSealed} holds.
     * @return the session id they name.
     */
    public static long sessionIdOf(byte[] sealed)
    {
        return getLong(sealed, 4);
    }

    /** {@return the offset of the body in a sealed notification} */
    public static int bodyOffset()
    {
        return HEADER_BYTES;
    }

    /**
     * Reads the length of a sealed notification's body.
     *
     * @param sealed bytes for which {@link #isSealed} holds.
     * @return the length of the body.
     */
    public static int bodyLength(byte[] sealed)
    {
        return sealed.length - HEADER_BYTES - MAC_BYTES;
    }

    /**
     * Verifies a notification of this session and records its sequence number.
     *
     * @param sealed bytes for which {@link #isSealed} holds and that name this session.
     * @return the verdict; only {@link Verdict#ACCEPTED} changes the window.
     */
    public Verdict open(byte[] sealed)
    {
        int macAt = sealed.length - MAC_BYTES;
        computeMac(sealed, macAt);
        // constant time, and without copying either side
        int difference = 0;
        for (int i = 0; i < MAC_BYTES; i++) {
            difference |= macOut[i] ^ sealed[macAt + i];
        }
        if (difference != 0) {
            return Verdict.BAD_MAC;
        }
        return accept(getLong(sealed, 12)) ? Verdict.ACCEPTED : Verdict.REPLAYED;
    }

    private boolean accept(long sequence)
    {
        if (sequence <= 0) {
            return false;
        }
        if (sequence > highest) {
            long advance = sequence - highest;
            if (advance >= REPLAY_WINDOW) {
                Arrays.fill(window, 0);
            }
            else {
                for (long s = highest + 1; s < sequence; s++) {
                    clear(s);
                }
            }
            highest = sequence;
            set(sequence);
            return true;
        }
        if (highest - sequence >= REPLAY_WINDOW) {
            return false;
        }
        int word = (int) ((sequence % REPLAY_WINDOW) >>> 6);
        long bit = 1L << (sequence & 63);
        if ((window[word] & bit) != 0) {
            return false;
        }
        window[word] |= bit;
        return true;
    }

    private void set(long sequence)
    {
        window[(int) ((sequence % REPLAY_WINDOW) >>> 6)] |= 1L << (sequence & 63);
    }

    private void clear(long sequence)
    {
        window[(int) ((sequence % REPLAY_WINDOW) >>> 6)] &= ~(1L << (sequence & 63));
    }

    private void computeMac(byte[] message, int length)
    {
        try {
            inner.update(innerPad);
            inner.update(message, 0, length);
            inner.digest(macOut, 0, DIGEST_BYTES);
            outer.update(outerPad);
            outer.update(macOut, 0, DIGEST_BYTES);
            outer.digest(macOut, 0, DIGEST_BYTES);
        }
        catch (DigestException e) {
            // the buffer is always a whole digest long
            throw new IllegalStateException(e);
        }
    }

    private static void putLong(byte[] bytes, int offset, long value)
    {
        for (int i = 7; i >= 0; i--) {
            bytes[offset + i] = (byte) value;
            value >>>= 8;
        }
    }

    private static long getLong(byte[] bytes, int offset)
    {
        long value = 0;
        for (int i = 0; i < 8; i++) {
            value = value << 8 | bytes[offset + i] & 0xffL;
        }
        return value;
    }
}
