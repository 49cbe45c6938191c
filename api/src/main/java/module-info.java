/**
 * The embedding API ({@code io.kvbridge.api}) and the SPI transports and cache layouts implement
 * ({@code io.kvbridge.spi.*}); depends on the JDK only. The JSON form of
 * {@link io.kvbridge.api.TransferParams} a router carries is in the module {@code io.kvbridge.json}
 * (artifact {@code kvbridge-json}), which brings the JSON parser. {@link io.kvbridge.api.KvBridge#builder()}
 * finds its runtime, {@code kvbridge-core}, as a {@link io.kvbridge.api.KvBridgeRuntime} service.
 */
module io.kvbridge.api
{
    exports io.kvbridge.api;
    exports io.kvbridge.spi;
    exports io.kvbridge.spi.discovery;
    exports io.kvbridge.spi.geometry;
    exports io.kvbridge.spi.layout;
    exports io.kvbridge.spi.memory;
    exports io.kvbridge.spi.transfer;

    uses io.kvbridge.api.KvBridgeRuntime;
}
