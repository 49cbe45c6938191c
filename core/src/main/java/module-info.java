/**
 * The runtime behind {@link io.kvbridge.api.KvBridge#builder()}: plugin registry, Guice wiring,
 * planner, wire protocol, side channel, transfer engine and the {@code local} transport. Embedders
 * program against {@code io.kvbridge.api}; they find this module as a
 * {@link io.kvbridge.api.KvBridgeRuntime} service and need none of its packages.
 *
 * <p>Exported for tools (the command line and its bench, the testkit's suites), not for engines:
 * {@code io.kvbridge.core.plugin}, the plugins found and checked; {@code io.kvbridge.core.config},
 * the configuration document, its sizes and durations, and the TLS and secret files it names; and
 * {@code io.kvbridge.core.tls}, the TLS 1.3 settings those files load into; {@code io.kvbridge.core.tools},
 * narrow entries to internal parts (the testkit's wire round trip of a geometry, a peer's inspection, the
 * side channel's envelopes and message maps for the bench's control link). The
 * rest (engine, planner, routing, side channel, wire, discovery, layouts and the local transport) is
 * internal and may change in any release; what times or checks an internal part lives in this
 * module's own tree beside it (its tests, and the JMH benchmarks in {@code src/jmh/java} that the
 * benchmarks jar runs), so nothing is exported only to be measured or tested.
 *
 * <p>msgpack-core publishes no module name, so {@code msgpack.core} is the name the module path
 * derives from its jar's file name ({@code msgpack-core-<version>.jar}); Guice and Micrometer name
 * their automatic modules in their manifests. The {@code local} transport copies through
 * {@code MemorySegment.reinterpret}, so a module-path engine passes
 * {@code --enable-native-access=io.kvbridge.core}.
 */
@SuppressWarnings("requires-automatic")
module io.kvbridge.core
{
    requires transitive io.kvbridge.api;
    // not transitive: no exported core type names a JSON type, and an engine reaches core as a service, not by
    // requiring it; a router or engine that uses TransferParamsJson requires io.kvbridge.json itself
    requires io.kvbridge.json;
    requires io.kvbridge.transport;
    requires com.google.common;
    requires com.google.guice;
    requires micrometer.core;
    requires msgpack.core;
    requires org.slf4j;

    exports io.kvbridge.core.config;
    exports io.kvbridge.core.plugin;
    exports io.kvbridge.core.tls;
    exports io.kvbridge.core.tools;

    // Guice calls the module's @Provides methods and the @Inject constructors reflectively
    opens io.kvbridge.core to com.google.guice;
    opens io.kvbridge.core.engine to com.google.guice;

    uses io.kvbridge.spi.discovery.DirectoryFactory;
    uses io.kvbridge.spi.layout.CacheLayoutFactory;
    uses io.kvbridge.spi.transfer.TransferBackendFactory;

    provides io.kvbridge.api.KvBridgeRuntime with io.kvbridge.core.CoreKvBridgeRuntime;
    provides io.kvbridge.spi.layout.CacheLayoutFactory with io.kvbridge.core.layout.PerLayerCacheLayoutFactory;
    provides io.kvbridge.spi.transfer.TransferBackendFactory with io.kvbridge.core.local.LocalBackendFactory;
}
