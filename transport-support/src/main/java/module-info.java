/**
 * The toolkit transports are built on. It loads native libraries for them, so on the module path it
 * needs {@code --enable-native-access=io.kvbridge.transport} along with the transport's own module.
 */
module io.kvbridge.transport
{
    requires transitive io.kvbridge.api;
    requires org.slf4j;

    exports io.kvbridge.transport;
    exports io.kvbridge.transport.libc;
}
