/**
 * The {@code hma} cache layout. {@link io.kvbridge.layout.hma.HmaPoolDescriptor} is exported for
 * engines that size their pools by the same rule.
 */
module io.kvbridge.layout.hma
{
    requires transitive io.kvbridge.api;

    exports io.kvbridge.layout.hma;

    provides io.kvbridge.spi.layout.CacheLayoutFactory with io.kvbridge.layout.hma.HmaCacheLayoutFactory;
}
