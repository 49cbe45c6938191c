/**
 * The JSON form of {@link io.kvbridge.api.TransferParams} a router carries between engines,
 * {@link io.kvbridge.json.TransferParamsJson}: the one exported entry point, for engines and
 * routers. It reads with jackson-core's streaming parser ({@code com.fasterxml.jackson.core},
 * jackson-core's own module name, with no dependencies of its own; not transitive, since no Jackson
 * type is in a signature here), so {@code io.kvbridge.api} depends on the JDK only.
 *
 * <p>The reader and writer ({@code io.kvbridge.json.internal}) are exported to core alone, which
 * reads its configuration document and writes its compatibility hash with them; they are not API.
 */
// core is not on the module path when this module is compiled: its name in the qualified export is not an error
@SuppressWarnings("module")
module io.kvbridge.json
{
    // transitive: TransferParamsJson's signatures name TransferParams and KvBridgeException
    requires transitive io.kvbridge.api;
    requires com.fasterxml.jackson.core;

    exports io.kvbridge.json;
    exports io.kvbridge.json.internal to io.kvbridge.core;
}
