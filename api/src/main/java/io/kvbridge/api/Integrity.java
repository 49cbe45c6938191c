package io.kvbridge.api;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Locale;

/**
 * Whether a connector checks the bytes of the blocks it moves end to end. A producer with
 * {@link #CRC32C} computes one CRC32C per block of a request at {@code prefillFinished} and hands
 * them to the consumer in the request's {@link TransferParams#digests()}; a consumer with
 * {@link #CRC32C} computes the same over the blocks it received, after the last byte arrived and
 * before it reports the request received, and fails the request with
 * {@link ErrorCode#DIGEST_MISMATCH} naming the first block that differs. Host memory only: the
 * connector cannot read device memory to compute a digest.
 */
public enum Integrity
{
    /** No digest is computed or checked (the default). */
    OFF,
    /** A CRC32C of every block: computed by a producer, required and checked by a consumer. */
    CRC32C;

    /** {@return the name configuration files and the command line use: {@code off} or {@code crc32c}} */
    public String configName()
    {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Reads a configured name.
     *
     * @param where what named it, for the message.
     * @param text {@code off} or {@code crc32c}.
     * @return the setting.
     * @throws KvBridgeException {@code CONFIG_INVALID} for any other text.
     */
    public static Integrity parse(String where, String text)
    {
        return switch (text) {
            case "off" -> OFF;
            case "crc32c" -> CRC32C;
            default -> throw new KvBridgeException(ErrorCode.CONFIG_INVALID, where + "=" + text + " is not an integrity setting (expected: off or crc32c)");
        };
    }
}
