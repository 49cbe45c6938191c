package io.kvbridge.discovery.etcd;

import io.kvbridge.spi.Spi;
import io.kvbridge.spi.discovery.DirectoryConfig;
import io.kvbridge.spi.discovery.DirectoryFactory;
import io.kvbridge.spi.discovery.EngineDirectory;

/** Opens {@link EtcdDirectory directories} for {@code etcd://host:port[,host:port...]} locations. */
public final class EtcdDirectoryFactory
        implements DirectoryFactory
{
    /** The scheme this factory serves. */
    public static final String SCHEME = "etcd";

    /** Creates the factory; connects nothing. */
    public EtcdDirectoryFactory()
    {
    }

    @Override
    public String scheme()
    {
        return SCHEME;
    }

    @Override
    public int spiVersion()
    {
        return Spi.VERSION;
    }

    @Override
    public EngineDirectory open(DirectoryConfig config)
    {
        return new EtcdDirectory(config);
    }
}
