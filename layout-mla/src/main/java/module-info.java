/**
 * The {@code mla} cache layout. {@link io.kvbridge.layout.mla.PackedMlaDescriptor} is exported for
 * engines that pack their rows by the same rule.
 */
module io.kvbridge.layout.mla
{
    requires transitive io.kvbridge.api;

    exports io.kvbridge.layout.mla;

    provides io.kvbridge.spi.layout.CacheLayoutFactory with io.kvbridge.layout.mla.MlaCacheLayoutFactory;
}
