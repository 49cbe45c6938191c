/**
 * The {@code cuda-ipc} transport, bound to its native library through FFM. The factory's package is
 * exported for its documented options; the bindings ({@code .ffm}) are not. On the module path it
 * needs {@code --enable-native-access=io.kvbridge.transport,io.kvbridge.backend.cudaipc}.
 */
module io.kvbridge.backend.cudaipc
{
    requires transitive io.kvbridge.api;
    // transitive: each exported factory extends the toolkit's AbstractTransferBackendFactory
    requires transitive io.kvbridge.transport;
    requires org.slf4j;

    exports io.kvbridge.backend.cudaipc;

    provides io.kvbridge.spi.transfer.TransferBackendFactory with io.kvbridge.backend.cudaipc.CudaIpcBackendFactory;
}
