package io.kvbridge.api;

/** The kinds of plugin kvbridge discovers. */
public enum PluginKind
{
    /** A {@link io.kvbridge.spi.transfer.TransferBackendFactory}. */
    TRANSPORT,
    /** A {@link io.kvbridge.spi.layout.CacheLayoutFactory}. */
    LAYOUT,
    /** A {@link io.kvbridge.spi.discovery.DirectoryFactory}, named by the scheme it serves. */
    DISCOVERY
}
