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
        for (DirectoryFactory factory : factories(loader)) {
            if (factory.scheme().equals(config.scheme())) {
                return factory.open(config);
            }
        }
        throw new KvBridgeException(ErrorCode.PLUGIN_UNKNOWN, "no discovery plugin serves discovery=" + config.location() + " (schemes found: "
                + schemes(loader) + "; for etcd put kvbridge-discovery-etcd on the class path)");
    }

    /**
     * Lists the schemes the discovery plugins found serve, without opening anything.
     *
     * @param loader where the plugins are looked for; null for the loader of this class.
     * @return the schemes, in the order the plugins were found.
     */
    public static List<String> schemes(ClassLoader loader)
    {
        List<String> schemes = new ArrayList<>();
        for (DirectoryFactory factory : factories(loader)) {
            schemes.add(factory.scheme());
        }
        return List.copyOf(schemes);
    }

    private static ServiceLoader<DirectoryFactory> factories(ClassLoader loader)
    {
        return ServiceLoader.load(DirectoryFactory.class, loader == null ? Directories.class.getClassLoader() : loader);
    }
}
