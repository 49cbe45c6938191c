package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.KvBridgeException;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The key a producer stage grants a request's blocks under for pulling consumers: {@value #BYTES}
 * bytes no one can derive from the request id, which reach the consumer only in the request's
 * {@link TransferParams}. Whoever holds the parameters may read the request while the producer holds
 * it; nobody else can, even knowing the request id and everything the producer publishes.
 *
 * <p>{@link #toString()} never shows the key, so parameters can be logged.
 */
public final class PullKey
{
    /** The length of a key. */
    public static final int BYTES = 16;
    /** The key of a stage whose key the parameters do not know: a consumer cannot pull from that stage. */
    public static final PullKey NONE = new PullKey(new byte[0]);

    private final byte[] bytes;

    private PullKey(byte[] bytes)
    {
        this.bytes = bytes;
    }

    /**
     * Wraps a key.
     *
     * @param bytes exactly {@value #BYTES} bytes; copied.
     * @return the key.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for another length.
     */
    public static PullKey of(byte[] bytes)
    {
        requireNonNull(bytes, "bytes is null");
        KvBridgeException.checkArgument(bytes.length == BYTES, "a pull key has %d bytes; got %d", BYTES, bytes.length);
        return new PullKey(bytes.clone());
    }

    /** {@return whether this is {@link #NONE}} */
    public boolean isNone()
    {
        return bytes.length == 0;
    }

    /** {@return a copy of the key's bytes; empty for {@link #NONE}} */
    public byte[] bytes()
    {
        return bytes.clone();
    }

    @Override
    public boolean equals(Object other)
    {
        return other instanceof PullKey key && MessageDigest.isEqual(bytes, key.bytes);
    }

    @Override
    public int hashCode()
    {
        return Arrays.hashCode(bytes);
    }

    /** {@return {@code PullKey[none]} or {@code PullKey[redacted]}: never the key} */
    @Override
    public String toString()
    {
        return isNone() ? "PullKey[none]" : "PullKey[redacted]";
    }
}
