/**
 * Discovery through etcd: each engine rank's entry under a lease, resolved and watched by engine id.
 * The runtime finds {@link io.kvbridge.discovery.etcd.EtcdDirectoryFactory} (scheme {@code etcd}) as
 * a {@link io.kvbridge.spi.discovery.DirectoryFactory} service, like every other plugin.
 *
 * <p>jetcd publishes no module name, so {@code jetcd.core} is the name the module path derives from
 * its jar's file name ({@code jetcd-core-<version>.jar}); a jetcd release that declares another name
 * needs this {@code requires} changed with it.
 */
@SuppressWarnings("requires-automatic")
module io.kvbridge.discovery.etcd
{
    requires transitive io.kvbridge.api;
    requires jetcd.core;
    requires org.slf4j;

    exports io.kvbridge.discovery.etcd;

    provides io.kvbridge.spi.discovery.DirectoryFactory with io.kvbridge.discovery.etcd.EtcdDirectoryFactory;
}
