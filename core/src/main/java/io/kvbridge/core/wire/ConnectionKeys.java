package io.kvbridge.core.wire;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.Objects.requireNonNull;

import java.io.ByteArrayOutputStream;
import java.security.GeneralSecurityException;
import java.util.Optional;
import javax.crypto.KDF;
import javax.crypto.spec.HKDFParameterSpec;

/**
 * The key each transport gets for authenticating its own connections (see
 * {@link io.kvbridge.spi.transfer.BackendContext#connectionKey}): HKDF-SHA256 of the shared secret,
 * with the transport's name in the info, so that a key one transport leaks opens nothing of another
 * and none of them reveals the secret the side channel authenticates with.
 */
public final class ConnectionKeys
{
    /** Length of a derived key. */
    public static final int KEY_BYTES = 32;

    private static final byte[] LABEL = "kvbridge transport connection key v1\0".getBytes(US_ASCII);

    private ConnectionKeys()
    {
    }

    /**
     * Derives a transport's connection key.
     *
     * @param secret the shared secret; empty for none.
     * @param transport the transport's name, e.g. {@code cuda-ipc}.
     * @return the key, or empty without a secret.
     */
    public static Optional<byte[]> derive(byte[] secret, String transport)
    {
        requireNonNull(secret, "secret is null");
        requireNonNull(transport, "transport is null");
        if (secret.length == 0) {
            return Optional.empty();
        }
        ByteArrayOutputStream info = new ByteArrayOutputStream();
        info.writeBytes(LABEL);
        info.writeBytes(transport.getBytes(UTF_8));
        try {
            return Optional.of(KDF.getInstance("HKDF-SHA256").deriveData(HKDFParameterSpec.ofExtract().addIKM(secret).thenExpand(info.toByteArray(), KEY_BYTES)));
        }
        catch (GeneralSecurityException e) {
            // every Java 25 platform provides HKDF-SHA256
            throw new IllegalStateException("HKDF-SHA256 is not available", e);
        }
    }
}
