package io.kvbridge.spi.discovery;

/**
 * Entry point of a discovery plugin, found with {@link java.util.ServiceLoader} by the scheme of the
 * configured location: list the implementation in
 * {@code META-INF/services/io.kvbridge.spi.discovery.DirectoryFactory} (and {@code provides} it in a
 * module descriptor). The runtime checks it like every other plugin: the scheme follows the plugin
 * name rule, no two discovery plugins serve one scheme, and {@link #spiVersion()} is this SPI's.
 * Constructors must be cheap and side-effect free (no connections).
 */
public interface DirectoryFactory
{
    /**
     * {@return the scheme of the locations this factory opens, for example {@code etcd}; it is the
     * plugin's name, so it follows the plugin name rule (lowercase ASCII letters, digits and
     * {@code -}, starting with a letter)}
     */
    String scheme();

    /**
     * Returns the SPI version the plugin was built against; implement as {@code return Spi.VERSION;}.
     *
     * @return the version.
     */
    int spiVersion();

    /**
     * Opens a directory. It may connect lazily: a store that is down now makes later calls fail (or
     * answer from the cache), not this one.
     *
     * @param config where the store lives and how the directory behaves.
     * @return the directory, closed by the caller.
     * @throws io.kvbridge.spi.KvBridgeException with {@code CONFIG_INVALID} when the configuration
     *     does not suit this store.
     */
    EngineDirectory open(DirectoryConfig config);
}
