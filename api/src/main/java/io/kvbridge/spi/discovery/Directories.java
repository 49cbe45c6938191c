package io.kvbridge.spi.discovery;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/** Finds the {@link DirectoryFactory} of a scheme among the discovery plugins on the class or module path. */
public final class Directories
{
    private Directories()
    {
    }

    /**
     * Opens the directory a configuration names, with the factory of its scheme.
     *
     * @param config the directory's configuration.
     * @param loader where the plugins are looked for; null for the loader of this class.
     * @return the directory, closed by the caller.
     * @throws KvBridgeException with {@link ErrorCode#PLUGIN_UNKNOWN} when no plugin serves the
     *     scheme (the message names the schemes found and the artifact to add).
     */
    public static EngineDirectory open(DirectoryConfig config, ClassLoader loader)
    {
        List<String> schemes = new ArrayList<>();
        ServiceLoader<DirectoryFactory> factories = loader == null ? ServiceLoader.load(DirectoryFactory.class, Directories.class.getClassLoader())
                : ServiceLoader.load(DirectoryFactory.class, loader);
        for (DirectoryFactory factory : factories) {
            if (factory.scheme().equals(config.scheme())) {
                return factory.open(config);
            }
            schemes.add(factory.scheme());
        }
        throw new KvBridgeException(ErrorCode.PLUGIN_UNKNOWN, "no discovery plugin serves discovery=" + config.location() + " (schemes found: "
                + schemes + "; for etcd put kvbridge-discovery-etcd on the class path)");
    }
}
