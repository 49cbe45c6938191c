package io.kvbridge.core.discovery;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.kvbridge.core.wire.WireWriter;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Signs and checks discovery entries with a key derived from the side channel's shared secret
 * (HMAC-SHA256 of a domain string under the secret), so that an entry proves it was written by an
 * engine holding the secret: whoever else can write the store cannot make a decoder's handshake go
 * elsewhere. The MAC covers every field a reader acts on: the engine id and rank of the entry's
 * key, the side channel's host and port, and the handshake payload (metadata and epoch).
 *
 * <p>A signed entry proves who wrote it, not that it is current: an engine's entry from before a
 * restart still verifies, which is why a handshake that fails at a located address falls back to
 * the address it was given. Thread-safe.
 */
public final class EntrySigner
{
    private static final String ALGORITHM = "HmacSHA256";
    private static final byte[] DOMAIN = "kvbridge discovery entry v1".getBytes(UTF_8);

    private final SecretKeySpec key;

    private EntrySigner(byte[] key)
    {
        this.key = new SecretKeySpec(key, ALGORITHM);
    }

    /**
     * Derives the signer of a deployment's shared secret.
     *
     * @param secret the side channel's shared secret; empty for none.
     * @return the signer, or null without a secret (entries are then unverifiable).
     */
    public static EntrySigner of(byte[] secret)
    {
        if (secret.length == 0) {
            return null;
        }
        return new EntrySigner(mac(new SecretKeySpec(secret, ALGORITHM), DOMAIN));
    }

    /**
     * Returns the MAC of an entry's fields.
     *
     * @param engineId the engine id of the entry's key.
     * @param ppRank the pipeline rank of the entry's key.
     * @param tpRank the tensor-parallel rank of the entry's key.
     * @param host the side channel's host.
     * @param port the side channel's port.
     * @param payload the handshake payload.
     * @return 32 bytes.
     */
    byte[] sign(String engineId, int ppRank, int tpRank, String host, int port, byte[] payload)
    {
        byte[] fields = new WireWriter().array(6).string(engineId).integer(ppRank).integer(tpRank).string(host).integer(port).binary(payload)
                .toByteArray();
        return mac(key, fields);
    }

    /** {@return whether the MAC, compared in constant time, is the one of the entry's fields} */
    boolean verifies(byte[] mac, String engineId, int ppRank, int tpRank, String host, int port, byte[] payload)
    {
        return MessageDigest.isEqual(mac, sign(engineId, ppRank, tpRank, host, port, payload));
    }

    private static byte[] mac(SecretKeySpec key, byte[] data)
    {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(key);
            return mac.doFinal(data);
        }
        catch (GeneralSecurityException e) {
            throw new IllegalStateException("every Java platform provides " + ALGORITHM, e);
        }
    }
}
