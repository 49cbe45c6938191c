package io.kvbridge.examples.cli;

import io.kvbridge.core.plugin.PluginRegistry;
import java.util.ArrayList;

/**
 * The discovered transports' names, for help and completion of {@code --backend}. Discovery lists
 * the factories without probing them, so help loads no native library.
 */
final class TransportNames extends ArrayList<String>
{
    TransportNames()
    {
        super(PluginRegistry.discover(TransportNames.class.getClassLoader()).transports().keySet());
    }
}
