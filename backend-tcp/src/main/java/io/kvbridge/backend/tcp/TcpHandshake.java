package io.kvbridge.backend.tcp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The proofs of the handshake. With a connection key (derived from the engines' shared secret), the
 * initiator's hello carries HMAC-SHA256 over the target's fresh nonce, its own nonce, both instance
 * ids and its name, so the target serves only a peer that holds the key and cannot be replayed a
 * hello it saw on another connection; the target's answer carries an HMAC over both nonces, its
 * instance id and its answer, so the initiator knows it reached an instance that holds the key too.
 * The two proofs are labelled apart, so neither can be reflected as the other. Without a key nothing
 * is proved and both fields are zeros.
 *
 * <p>Threads: any; an instance is immutable.
 */
final class TcpHandshake
{
    private static final SecureRandom NONCES = new SecureRandom();
    private static final byte[] HELLO_LABEL = "kvbridge-tcp-hello-v3".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ACK_LABEL = "kvbridge-tcp-ack-v3".getBytes(StandardCharsets.US_ASCII);

    private final SecretKeySpec key;

    /** @param key the connection key, or null to prove nothing. */
    TcpHandshake(byte[] key)
    {
        this.key = key == null || key.length == 0 ? null : new SecretKeySpec(key, "HmacSHA256");
    }

    /** {@return whether peers must prove the key} */
    boolean keyed()
    {
        return key != null;
    }

    static byte[] nonce()
    {
        byte[] nonce = new byte[TcpWire.NONCE_BYTES];
        NONCES.nextBytes(nonce);
        return nonce;
    }

    /** {@return the hello's proof, zeros without a key} */
    byte[] helloMac(byte[] targetNonce, byte[] initiatorNonce, long from, long to, byte[] name)
    {
        if (key == null) {
            return new byte[TcpWire.MAC_BYTES];
        }
        ByteBuffer ids = ByteBuffer.allocate(18).order(ByteOrder.LITTLE_ENDIAN).putLong(from).putLong(to).putShort((short) name.length);
        return mac(HELLO_LABEL, targetNonce, initiatorNonce, ids.array(), name);
    }

    /** {@return the answer's proof, zeros without a key} */
    byte[] ackMac(byte[] targetNonce, byte[] initiatorNonce, long instance, byte result)
    {
        if (key == null) {
            return new byte[TcpWire.MAC_BYTES];
        }
        ByteBuffer fields = ByteBuffer.allocate(9).order(ByteOrder.LITTLE_ENDIAN).putLong(instance).put(result);
        return mac(ACK_LABEL, targetNonce, initiatorNonce, fields.array());
    }

    /** {@return whether a received proof matches the expected one, compared in constant time} */
    static boolean matches(byte[] expected, ByteBuffer in, int at)
    {
        byte[] received = new byte[TcpWire.MAC_BYTES];
        in.get(at, received);
        return MessageDigest.isEqual(expected, received);
    }

    private byte[] mac(byte[]... parts)
    {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(key);
            for (byte[] part : parts) {
                mac.update(part);
            }
            return mac.doFinal();
        }
        catch (GeneralSecurityException e) {
            // every JDK provides HmacSHA256; a key this class made itself is always valid for it
            throw new IllegalStateException("HmacSHA256 is not available: " + e, e);
        }
    }
}
