/**
 * The embedding API ({@code io.kvbridge.api}) and the SPI transports and cache layouts implement
 * ({@code io.kvbridge.spi.*}); depends on the JDK and Jackson's streaming parser only, which reads
 * the JSON that crosses process boundaries ({@link io.kvbridge.api.TransferParamsJson}, configuration
 * files) and appears in no signature here. {@link io.kvbridge.api.KvBridge#builder()}
 * finds its runtime, {@code kvbridge-core}, as a {@link io.kvbridge.api.KvBridgeRuntime} service.
 */
module io.kvbridge.api
{
    exports io.kvbridge.api;
    exports io.kvbridge.api.json;
    exports io.kvbridge.spi;
    exports io.kvbridge.spi.discovery;
    exports io.kvbridge.spi.geometry;
    exports io.kvbridge.spi.layout;
    exports io.kvbridge.spi.memory;
    exports io.kvbridge.spi.transfer;

    requires com.fasterxml.jackson.core;

    uses io.kvbridge.api.KvBridgeRuntime;
}
