package io.kvbridge.spi;

/**
 * The version of the service-provider interface.
 *
 * <p>Every plugin factory returns {@link #VERSION} from its {@code spiVersion()} method. Because the
 * constant is inlined at compile time, the method reports the version the plugin was built against,
 * and the core refuses a plugin whose version differs from its own.
 *
 * <p>Version 3: {@link io.kvbridge.spi.transfer.TransferBackend#post} takes one
 * {@link io.kvbridge.spi.transfer.TransferRequest} in place of the two positional overloads of
 * version 2; {@code docs/architecture.md} ("SPI 3: one post shape") gives the migration.
 */
public final class Spi
{
    /** The SPI version this api jar defines. */
    public static final int VERSION = 3;

    private Spi()
    {
    }
}
