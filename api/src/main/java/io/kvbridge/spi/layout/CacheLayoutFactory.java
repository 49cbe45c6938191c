package io.kvbridge.spi.layout;

import java.util.Map;

/**
 * Entry point of a cache-layout plugin, found with {@link java.util.ServiceLoader}: list the
 * implementation in {@code META-INF/services/io.kvbridge.spi.layout.CacheLayoutFactory}.
 *
 * <p>Constructors must be cheap and side-effect free: the service loader instantiates every
 * provider on the class path.
 */
public interface CacheLayoutFactory
{
    /**
     * Returns the layout's name: lowercase ASCII letters, digits and {@code -}, at most 64 characters.
     *
     * @return the name users select the layout by.
     */
    String name();

    /**
     * Returns the SPI version the plugin was built against; implement as {@code return Spi.VERSION;}.
     *
     * @return the version.
     */
    int spiVersion();

    /**
     * Creates the layout.
     *
     * @param config layout options; unknown keys must be rejected with {@code CONFIG_INVALID}.
     * @return the layout.
     */
    CacheLayout create(Map<String, String> config);

    /**
     * Returns a one-line description for plugin listings.
     *
     * @return the description.
     */
    default String description()
    {
        return "";
    }
}
