package io.kvbridge.core.wire;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * Hard bounds every decoder enforces before it allocates, so that no input, however hostile, makes
 * it allocate more than the input's own size or recurse deeper than {@code maxNesting}.
 *
 * @param maxFrameBytes largest frame or encoded message accepted, in bytes.
 * @param maxListLength most entries in one msgpack array or map.
 * @param maxStringBytes longest string, in UTF-8 bytes.
 * @param maxBinaryBytes longest binary value (e.g. a transport's opaque metadata), in bytes.
 * @param maxNesting deepest nesting of arrays and maps.
 */
public record WireLimits(int maxFrameBytes, int maxListLength, int maxStringBytes, int maxBinaryBytes, int maxNesting)
{
    /** Limits that fit every geometry a real model produces, with a wide margin. */
    public static final WireLimits DEFAULT = new WireLimits(16 << 20, 65_536, 4_096, 8 << 20, 16);

    /** Validates the values. */
    public WireLimits
    {
        checkArgument(maxFrameBytes > 0, "maxFrameBytes=%d is not positive", maxFrameBytes);
        checkArgument(maxListLength > 0, "maxListLength=%d is not positive", maxListLength);
        checkArgument(maxStringBytes > 0, "maxStringBytes=%d is not positive", maxStringBytes);
        checkArgument(maxBinaryBytes > 0, "maxBinaryBytes=%d is not positive", maxBinaryBytes);
        checkArgument(maxNesting > 0 && maxNesting <= 64, "maxNesting=%d is outside [1, 64]", maxNesting);
    }
}
