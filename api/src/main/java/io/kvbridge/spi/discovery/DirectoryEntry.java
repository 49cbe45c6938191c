package io.kvbridge.spi.discovery;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import java.util.Arrays;

/**
 * What one rank of an engine publishes: its coordinates and opaque bytes (the core puts the rank's
 * side-channel address and handshake payload there). Read back from a directory, every field is
 * untrusted until the reader checked it.
 *
 * @param engineId the engine's id; non-empty, without {@code /}.
 * @param ppRank the rank's pipeline stage; non-negative.
 * @param tpRank the rank's tensor-parallel rank; non-negative.
 * @param value the published bytes.
 */
public record DirectoryEntry(String engineId, int ppRank, int tpRank, byte[] value)
{
    /** Validates the values and copies the bytes. */
    public DirectoryEntry
    {
        checkEngineId(engineId);
        checkArgument(ppRank >= 0, "ppRank=%d is negative", ppRank);
        checkArgument(tpRank >= 0, "tpRank=%d is negative", tpRank);
        value = requireNonNull(value, "value is null").clone();
    }

    /**
     * Checks that an engine id can name a directory key.
     *
     * @param engineId the id.
     * @return the id.
     * @throws io.kvbridge.spi.KvBridgeException with {@code INVALID_ARGUMENT} when it is empty, holds
     *     {@code /} or a control character, or is longer than 256 characters.
     */
    public static String checkEngineId(String engineId)
    {
        requireNonNull(engineId, "engineId is null");
        checkArgument(!engineId.isEmpty() && engineId.length() <= 256, "engineId of %d characters (expected: 1..256)", engineId.length());
        checkArgument(engineId.chars().noneMatch(c -> c == '/' || Character.isISOControl(c)),
                "engineId=%s holds '/' or a control character, which a directory key cannot carry", printable(engineId));
        return engineId;
    }

    /** The id as a message may show it: control characters (a hostile id's line breaks and terminal escapes) and backslashes as Java-style u-escapes. */
    private static String printable(String engineId)
    {
        StringBuilder out = new StringBuilder(engineId.length() + 16);
        engineId.chars().forEach(c -> {
            if (Character.isISOControl(c) || c == '\\') {
                out.append(String.format(java.util.Locale.ROOT, "\\u%04x", c));
            }
            else {
                out.append((char) c);
            }
        });
        return out.toString();
    }

    /** {@return a copy of the published bytes} */
    @Override
    public byte[] value()
    {
        return value.clone();
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof DirectoryEntry other && engineId.equals(other.engineId) && ppRank == other.ppRank && tpRank == other.tpRank
                && Arrays.equals(value, other.value);
    }

    @Override
    public int hashCode()
    {
        return ((engineId.hashCode() * 31 + ppRank) * 31 + tpRank) * 31 + Arrays.hashCode(value);
    }

    @Override
    public String toString()
    {
        return "DirectoryEntry[engineId=" + engineId + ", pp" + ppRank + ":tp" + tpRank + ", value=" + value.length + " bytes]";
    }
}
