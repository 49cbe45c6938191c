package io.kvbridge.core.engine;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.kvbridge.api.PullKey;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Where the pull keys of one incarnation of an engine's side channel come from: an HMAC-SHA256,
 * under 32 bytes drawn from {@link SecureRandom} when the side channel started, of the producer's
 * request id, cut to {@link PullKey#BYTES}. Every rank that side channel serves here grants a request
 * under the same key without talking to the others (each returns its own parameters, any of which
 * the router may forward), and nobody outside this process can derive a key from a request id: the
 * secret never leaves it and a restart draws another. Parameters issued before a restart therefore
 * read nothing from the process that replaced it.
 *
 * <p>Thread-safe.
 */
final class PullKeys
{
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String ALGORITHM = "HmacSHA256";
    private static final byte[] DOMAIN = "kvbridge pull grant\0".getBytes(UTF_8);

    private final SecretKeySpec secret;

    private PullKeys(byte[] secret)
    {
        this.secret = new SecretKeySpec(secret, ALGORITHM);
    }

    /** {@return keys under a secret drawn now} */
    static PullKeys fresh()
    {
        byte[] secret = new byte[32];
        RANDOM.nextBytes(secret);
        return new PullKeys(secret);
    }

    /**
     * Returns the key a request is granted under.
     *
     * @param producerRequestId the producer's id of the request.
     * @return its key.
     */
    PullKey of(String producerRequestId)
    {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(secret);
            mac.update(DOMAIN);
            byte[] full = mac.doFinal(producerRequestId.getBytes(UTF_8));
            return PullKey.of(Arrays.copyOf(full, PullKey.BYTES));
        }
        catch (GeneralSecurityException e) {
            throw new IllegalStateException("every Java platform provides " + ALGORITHM, e);
        }
    }
}
