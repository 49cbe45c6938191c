package io.kvbridge.core.wire;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.InstantSource;
import java.util.HashSet;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.Set;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Wraps side-channel messages in an envelope and, with a shared secret, authenticates them: every
 * envelope then carries a random nonce, the sender's wall-clock timestamp and an HMAC-SHA256 over
 * the direction, nonce, timestamp, the nonce of the request a reply answers, and the content. The
 * receiver rejects a bad MAC, a timestamp outside the window and a nonce it saw before; it
 * remembers nonces only as long as the window, after which the timestamp check alone refuses them,
 * so the nonce cache stays bounded.
 *
 * <p>Without a secret, envelopes carry only the content and anything is accepted.
 *
 * <p>Thread safe.
 */
public final class MessageAuthenticator
{
    /** Length of a nonce in bytes. */
    public static final int NONCE_BYTES = 16;
    /** Length of a MAC in bytes. */
    public static final int MAC_BYTES = 32;
    /** Shortest secret accepted, in bytes. */
    public static final int MIN_SECRET_BYTES = 16;

    private static final String ALGORITHM = "HmacSHA256";
    private static final String WHAT = "side channel envelope";

    /** Which way a message travels; part of the MAC so a request cannot pass as a reply. */
    public enum Direction
    {
        /** Client to server. */
        REQUEST("kvbridge side channel request"),
        /** Server to client. */
        REPLY("kvbridge side channel reply");

        private final byte[] label;

        Direction(String label)
        {
            this.label = label.getBytes(StandardCharsets.US_ASCII);
        }
    }

    /**
     * An opened envelope.
     *
     * @param content the message inside.
     * @param nonce the sender's nonce, empty without a secret; a reply must name it.
     */
    public record Opened(byte[] content, byte[] nonce)
    {
    }

    private record Seen(long timestampMillis, ByteBuffer nonce)
    {
    }

    private final SecretKeySpec key;
    private final long windowMillis;
    private final int maxRememberedNonces;
    private final InstantSource clock;
    private final WireLimits limits;
    private final SecureRandom random = new SecureRandom();
    private final AuthenticationCounters counters = new AuthenticationCounters();

    private final Object nonceLock = new Object();
    private final Set<ByteBuffer> seenNonces = new HashSet<>();
    private final PriorityQueue<Seen> seenByAge = new PriorityQueue<>((a, b) -> Long.compare(a.timestampMillis, b.timestampMillis));

    private MessageAuthenticator(byte[] secret, Duration window, int maxRememberedNonces, InstantSource clock, WireLimits limits)
    {
        this.key = secret == null ? null : new SecretKeySpec(secret, ALGORITHM);
        this.windowMillis = window.toMillis();
        this.maxRememberedNonces = maxRememberedNonces;
        this.clock = requireNonNull(clock, "clock is null");
        this.limits = requireNonNull(limits, "limits is null");
    }

    /**
     * Creates an authenticator that accepts everything and adds no MAC.
     *
     * @param limits bounds for decoding envelopes.
     * @return the authenticator.
     */
    public static MessageAuthenticator unauthenticated(WireLimits limits)
    {
        return new MessageAuthenticator(null, Duration.ZERO, 0, InstantSource.system(), limits);
    }

    /**
     * Creates an authenticator with a shared secret.
     *
     * @param secret at least {@value #MIN_SECRET_BYTES} random bytes, the same on both engines.
     * @param window largest accepted difference between a message's timestamp and the local clock.
     * @param maxRememberedNonces bound of the nonce cache; messages beyond it within one window are refused.
     * @param clock wall clock for timestamps.
     * @param limits bounds for decoding envelopes.
     * @return the authenticator.
     * @throws KvBridgeException with {@link ErrorCode#CONFIG_INVALID} for a short secret or a
     *     non-positive window or bound.
     */
    public static MessageAuthenticator withSecret(byte[] secret, Duration window, int maxRememberedNonces, InstantSource clock, WireLimits limits)
    {
        requireNonNull(secret, "secret is null");
        requireNonNull(window, "window is null");
        KvBridgeException.check(secret.length >= MIN_SECRET_BYTES, ErrorCode.CONFIG_INVALID,
                "side channel secret of %d bytes is too short (expected: at least %d random bytes)", secret.length, MIN_SECRET_BYTES);
        KvBridgeException.check(window.toMillis() > 0, ErrorCode.CONFIG_INVALID, "authentication window=%s is not positive", window);
        KvBridgeException.check(maxRememberedNonces > 0, ErrorCode.CONFIG_INVALID, "maxRememberedNonces=%d is not positive", maxRememberedNonces);
        return new MessageAuthenticator(secret.clone(), window, maxRememberedNonces, clock, limits);
    }

    /** {@return whether messages are authenticated} */
    public boolean authenticated()
    {
        return key != null;
    }

    /** {@return the counters of messages opened} */
    public AuthenticationCounters counters()
    {
        return counters;
    }

    /**
     * Wraps a message in an envelope.
     *
     * @param direction which way it travels.
     * @param content the message.
     * @param inReplyTo for a reply, the nonce of the request it answers; empty otherwise.
     * @return the envelope bytes, and the nonce used (empty without a secret).
     */
    public Opened seal(Direction direction, byte[] content, byte[] inReplyTo)
    {
        requireNonNull(direction, "direction is null");
        requireNonNull(content, "content is null");
        requireNonNull(inReplyTo, "inReplyTo is null");
        KvBridgeException.checkArgument(inReplyTo.length == 0 || inReplyTo.length == NONCE_BYTES,
                "inReplyTo.length=%d (expected: 0 or %d)", inReplyTo.length, NONCE_BYTES);
        if (key == null) {
            return new Opened(new WireWriter().map(1).string("content").binary(content).toByteArray(), new byte[0]);
        }
        byte[] nonce = new byte[NONCE_BYTES];
        random.nextBytes(nonce);
        long timestamp = clock.millis();
        byte[] mac = mac(direction, nonce, timestamp, inReplyTo, content);
        byte[] envelope = new WireWriter().map(4)
                .string("content").binary(content)
                .string("nonce").binary(nonce)
                .string("timestamp_ms").integer(timestamp)
                .string("mac").binary(mac)
                .toByteArray();
        return new Opened(envelope, nonce);
    }

    /**
     * Opens an envelope from a peer, authenticating it when a secret is configured.
     *
     * @param direction which way it travelled.
     * @param envelope the untrusted bytes.
     * @param inReplyTo for a reply, the nonce of the request it answers; empty otherwise.
     * @return the content and the sender's nonce.
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} for a malformed envelope, or
     *     {@link ErrorCode#AUTHENTICATION_FAILED} for a missing or bad MAC, a stale timestamp, a
     *     replayed nonce or a full nonce cache; each failure is counted.
     */
    public Opened open(Direction direction, byte[] envelope, byte[] inReplyTo)
    {
        requireNonNull(direction, "direction is null");
        requireNonNull(inReplyTo, "inReplyTo is null");
        WireMap map = WireDecoder.decodeMap(envelope, limits, WHAT);
        byte[] content = map.requireBinary("content");
        if (key == null) {
            counters.accepted.incrementAndGet();
            return new Opened(content, map.has("nonce") ? map.requireBinary("nonce") : new byte[0]);
        }
        if (!map.has("mac") || !map.has("nonce") || !map.has("timestamp_ms")) {
            counters.unauthenticated.incrementAndGet();
            throw new KvBridgeException(ErrorCode.AUTHENTICATION_FAILED, "the " + label(direction)
                    + " carries no MAC, nonce or timestamp but this side channel requires authentication (configure the same shared secret on both engines)");
        }
        byte[] mac = map.requireBinary("mac");
        byte[] nonce = map.requireBinary("nonce");
        long timestamp = map.requireLong("timestamp_ms");
        if (mac.length != MAC_BYTES || nonce.length != NONCE_BYTES
                || !MessageDigest.isEqual(mac, mac(direction, nonce, timestamp, inReplyTo, content))) {
            counters.badMac.incrementAndGet();
            throw new KvBridgeException(ErrorCode.AUTHENTICATION_FAILED, "the " + label(direction)
                    + " has a MAC that does not verify (the peers use different shared secrets, or the message was altered)");
        }
        long now = clock.millis();
        if (timestamp < now - windowMillis || timestamp > now + windowMillis) {
            counters.stale.incrementAndGet();
            throw new KvBridgeException(ErrorCode.AUTHENTICATION_FAILED, String.format(Locale.ROOT,
                    "the %s has timestamp_ms=%d but local time is %d, outside window=%d ms (an old message replayed, or the hosts' clocks differ:"
                            + " synchronise them)", label(direction), timestamp, now, windowMillis));
        }
        remember(direction, nonce, timestamp, now);
        counters.accepted.incrementAndGet();
        return new Opened(content, nonce);
    }

    private void remember(Direction direction, byte[] nonce, long timestamp, long now)
    {
        ByteBuffer wrapped = ByteBuffer.wrap(nonce.clone());
        synchronized (nonceLock) {
            // a nonce older than the window can never pass the timestamp check again: forget it
            while (!seenByAge.isEmpty() && seenByAge.peek().timestampMillis < now - windowMillis) {
                seenNonces.remove(seenByAge.poll().nonce);
            }
            if (seenNonces.contains(wrapped)) {
                counters.replayed.incrementAndGet();
                throw new KvBridgeException(ErrorCode.AUTHENTICATION_FAILED, "the " + label(direction)
                        + " repeats a nonce seen within the last " + windowMillis + " ms (a replayed message)");
            }
            if (seenNonces.size() >= maxRememberedNonces) {
                counters.overloaded.incrementAndGet();
                throw new KvBridgeException(ErrorCode.AUTHENTICATION_FAILED, String.format(Locale.ROOT,
                        "more than maxRememberedNonces=%d authenticated messages arrived within window=%d ms; the %s is refused (raise the bound)",
                        maxRememberedNonces, windowMillis, label(direction)));
            }
            seenNonces.add(wrapped);
            seenByAge.add(new Seen(timestamp, wrapped));
        }
    }

    private byte[] mac(Direction direction, byte[] nonce, long timestamp, byte[] inReplyTo, byte[] content)
    {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(key);
            mac.update(direction.label);
            mac.update((byte) 0);
            mac.update(nonce);
            mac.update(ByteBuffer.allocate(Long.BYTES).putLong(timestamp).array());
            // length-prefixed so no bytes can move between the request nonce and the content
            mac.update((byte) inReplyTo.length);
            mac.update(inReplyTo);
            mac.update(content);
            return mac.doFinal();
        }
        catch (GeneralSecurityException e) {
            // every Java platform must provide HmacSHA256
            throw new IllegalStateException(ALGORITHM + " is not available", e);
        }
    }

    private static String label(Direction direction)
    {
        return direction == Direction.REQUEST ? "request" : "reply";
    }
}
