package io.kvbridge.core.wire;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import javax.crypto.KDF;
import javax.crypto.spec.HKDFParameterSpec;

/**
 * The key of one notification session: what a client rank and a server rank both derive from one
 * side-channel handshake, so that the server rank can tell the client rank's notifications from
 * anybody else's. HKDF-SHA256 with the shared secret as input key material (empty without one), both
 * sides' handshake nonces as salt, and the client's transport agent name and the server's engine
 * and rank as info; 40 bytes out: the 32-byte MAC key and an 8-byte session id.
 *
 * <p>Without a shared secret the key depends only on what crossed the side channel in the clear:
 * it binds notifications to a handshake, so a process that never shook hands (or cannot read the
 * side channel's traffic) cannot forge them, but it proves nothing about who shook hands.
 *
 * @param sessionId names the session in every sealed notification.
 * @param key the HMAC-SHA256 key.
 * @param clientAgent the transport agent name the client declared; its notifications must come from it.
 */
public record SessionKey(long sessionId, byte[] key, String clientAgent)
{
    /** Length of each side's handshake nonce. */
    public static final int NONCE_BYTES = 16;
    /** Length of the MAC key. */
    public static final int KEY_BYTES = 32;

    private static final byte[] LABEL = "kvbridge notification session v1".getBytes(US_ASCII);
    private static final SecureRandom RANDOM = new SecureRandom();

    /** Validates the values and copies the key. */
    public SessionKey
    {
        requireNonNull(clientAgent, "clientAgent is null");
        key = requireNonNull(key, "key is null").clone();
        KvBridgeException.checkArgument(key.length == KEY_BYTES, "key.length=%d (expected: %d)", key.length, KEY_BYTES);
    }

    /** {@return a copy of the MAC key} */
    @Override
    public byte[] key()
    {
        return key.clone();
    }

    /** {@return a fresh random handshake nonce} */
    public static byte[] newNonce()
    {
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        return nonce;
    }

    /**
     * Derives the session both sides of a handshake share.
     *
     * @param secret the shared secret; empty for none.
     * @param clientNonce the client's nonce, sent in its request.
     * @param serverNonce the server's nonce, sent in its reply.
     * @param clientAgent the client rank's transport agent name, sent in its request.
     * @param serverEngine the server's engine id.
     * @param ppRank the server rank's stage.
     * @param tpRank the server rank's tensor-parallel rank.
     * @return the session.
     */
    public static SessionKey derive(byte[] secret, byte[] clientNonce, byte[] serverNonce, String clientAgent, String serverEngine, int ppRank,
            int tpRank)
    {
        requireNonNull(secret, "secret is null");
        requireNonNull(clientAgent, "clientAgent is null");
        requireNonNull(serverEngine, "serverEngine is null");
        KvBridgeException.check(clientNonce.length == NONCE_BYTES && serverNonce.length == NONCE_BYTES, ErrorCode.PROTOCOL_ERROR,
                "session nonces of %d and %d bytes (expected: %d each)", clientNonce.length, serverNonce.length, NONCE_BYTES);
        byte[] salt = Arrays.copyOf(clientNonce, 2 * NONCE_BYTES);
        System.arraycopy(serverNonce, 0, salt, NONCE_BYTES, NONCE_BYTES);
        // every variable-length part is length-prefixed, so no two different inputs give the same info
        ByteArrayOutputStream info = new ByteArrayOutputStream();
        info.writeBytes(LABEL);
        lengthPrefixed(info, clientAgent.getBytes(UTF_8));
        lengthPrefixed(info, serverEngine.getBytes(UTF_8));
        info.writeBytes(ByteBuffer.allocate(8).putInt(ppRank).putInt(tpRank).array());
        byte[] derived;
        try {
            derived = KDF.getInstance("HKDF-SHA256").deriveData(HKDFParameterSpec.ofExtract().addIKM(secret).addSalt(salt)
                    .thenExpand(info.toByteArray(), KEY_BYTES + Long.BYTES));
        }
        catch (GeneralSecurityException e) {
            // every Java 25 platform provides HKDF-SHA256
            throw new IllegalStateException("HKDF-SHA256 is not available", e);
        }
        long sessionId = ByteBuffer.wrap(derived, KEY_BYTES, Long.BYTES).getLong();
        return new SessionKey(sessionId, Arrays.copyOf(derived, KEY_BYTES), clientAgent);
    }

    private static void lengthPrefixed(ByteArrayOutputStream out, byte[] bytes)
    {
        out.writeBytes(ByteBuffer.allocate(4).putInt(bytes.length).array());
        out.writeBytes(bytes);
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof SessionKey other && sessionId == other.sessionId && Arrays.equals(key, other.key) && clientAgent.equals(other.clientAgent);
    }

    @Override
    public int hashCode()
    {
        return Long.hashCode(sessionId) * 31 + clientAgent.hashCode();
    }

    @Override
    public String toString()
    {
        // the key never appears in logs
        return "SessionKey[sessionId=" + Long.toHexString(sessionId) + ", clientAgent=" + clientAgent + "]";
    }
}
