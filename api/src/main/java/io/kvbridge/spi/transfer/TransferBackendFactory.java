package io.kvbridge.spi.transfer;

import java.util.Map;

/**
 * Entry point of a transport plugin, found with {@link java.util.ServiceLoader}: list the
 * implementation in {@code META-INF/services/io.kvbridge.spi.transfer.TransferBackendFactory}.
 *
 * <p>Constructors must be cheap and side-effect free (no native work): the service loader
 * instantiates every provider on the class path, available or not.
 */
public interface TransferBackendFactory
{
    /**
     * Returns the transport's name: lowercase ASCII letters, digits and {@code -}, at most 64 characters.
     *
     * @return the name users select the transport by.
     */
    String name();

    /**
     * Returns the SPI version the plugin was built against; implement as {@code return Spi.VERSION;}.
     *
     * @return the version.
     */
    int spiVersion();

    /**
     * Tells whether the transport can run here. Never throws; may load native libraries.
     *
     * @return availability with every reason it cannot run.
     */
    Availability probe();

    /**
     * Returns the preference among available transports when none is named: higher wins.
     *
     * @return the priority; {@code local} uses 0.
     */
    default int priority()
    {
        return 0;
    }

    /**
     * Checks transport options as {@link #create} reads them, without creating anything: no native
     * work, no sockets, no probe, so that a configuration or a command line can be checked before
     * anything starts. A factory that cannot check its options that cheaply keeps the default.
     *
     * @param config transport options.
     * @return true when the options were checked and are valid; false when this factory does not
     *     check options before {@link #create} (the default).
     * @throws io.kvbridge.spi.KvBridgeException {@code CONFIG_INVALID} naming every bad key and value,
     *     as {@link #create} would.
     */
    default boolean checkOptions(Map<String, String> config)
    {
        return false;
    }

    /**
     * Creates a transport instance.
     *
     * @param config transport options; unknown keys must be rejected with {@code CONFIG_INVALID}.
     * @param context services of the core.
     * @return a new instance, closed by the caller.
     * @throws io.kvbridge.spi.KvBridgeException {@code BACKEND_UNAVAILABLE} when the probe fails.
     */
    TransferBackend create(Map<String, String> config, BackendContext context);
}
