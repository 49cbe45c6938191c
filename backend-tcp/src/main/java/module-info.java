/**
 * The {@code tcp} transport: kvbridge's own stream protocol over plain TCP sockets (Java NIO), no
 * native library. Host memory is read and written through direct buffers over the registered
 * ranges, which needs {@code --enable-native-access=io.kvbridge.backend.tcp} on the module path.
 */
module io.kvbridge.backend.tcp
{
    requires transitive io.kvbridge.api;
    // transitive: each exported factory extends the toolkit's AbstractTransferBackendFactory
    requires transitive io.kvbridge.transport;
    requires jdk.net;
    requires org.slf4j;

    exports io.kvbridge.backend.tcp;

    provides io.kvbridge.spi.transfer.TransferBackendFactory with io.kvbridge.backend.tcp.TcpBackendFactory;
}
