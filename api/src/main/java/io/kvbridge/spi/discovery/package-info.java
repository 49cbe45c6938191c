/**
 * The discovery SPI: where engines publish each rank's entry and consumers find them by engine id.
 * A {@link io.kvbridge.spi.discovery.DirectoryFactory} is found with {@link java.util.ServiceLoader}
 * by the scheme of the configured location ({@code etcd://host:port,...}); the
 * {@link io.kvbridge.spi.discovery.EngineDirectory} it opens keeps what it publishes alive under a
 * lease, so a dead engine's entries vanish by themselves. Values are opaque bytes to the directory;
 * whoever reads them treats them as untrusted.
 */
package io.kvbridge.spi.discovery;
