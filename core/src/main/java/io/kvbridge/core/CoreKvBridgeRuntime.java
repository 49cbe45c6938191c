package io.kvbridge.core;

import com.google.inject.CreationException;
import com.google.inject.Guice;
import com.google.inject.Injector;
import com.google.inject.ProvisionException;
import com.google.inject.Stage;
import com.google.inject.spi.Message;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.KvBridgeRuntime;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.spi.KvBridgeException;
import java.util.Collection;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Builds bridges: discovers plugins with the class loader that loaded kvbridge, and wires one Guice
 * injector per bridge. Guice failures are unwrapped so callers see the typed error that caused them.
 */
public final class CoreKvBridgeRuntime implements KvBridgeRuntime
{
    private static final AtomicInteger AGENTS = new AtomicInteger();

    static {
        // kvbridge uses no method interception; without this, Guice defines its classes through
        // sun.misc.Unsafe, which JDK 24+ warns about on every start
        if (System.getProperty("guice_bytecode_gen_option") == null) {
            System.setProperty("guice_bytecode_gen_option", "DISABLED");
        }
    }

    /** Creates the runtime; {@link java.util.ServiceLoader} finds it through {@code META-INF/services}. */
    public CoreKvBridgeRuntime()
    {
    }

    @Override
    public KvBridge start(KvBridge.Builder builder)
    {
        PluginRegistry registry = PluginRegistry.discover(CoreKvBridgeRuntime.class.getClassLoader());
        String agentName = builder.agentName().isEmpty()
                ? "kvbridge-" + ProcessHandle.current().pid() + "-" + AGENTS.incrementAndGet()
                : builder.agentName();
        EmbedderServices embedder = EmbedderServices.from(builder);
        return start(new BridgeSettings(builder.transport(), agentName, builder.transportConfig(), builder.sideChannelSecret(),
                BridgeSettings.SUMMARY_INTERVAL), registry, embedder);
    }

    static KvBridge start(BridgeSettings settings, PluginRegistry registry, EmbedderServices embedder)
    {
        try {
            return injector(settings, registry, embedder).getInstance(CoreKvBridge.class);
        }
        catch (CreationException e) {
            throw unwrap(e, e.getErrorMessages());
        }
        catch (ProvisionException e) {
            throw unwrap(e, e.getErrorMessages());
        }
    }

    /** The injector of one bridge, every singleton built: a plugin's or a setting's error surfaces here. */
    static Injector injector(BridgeSettings settings, PluginRegistry registry, EmbedderServices embedder)
    {
        return Guice.createInjector(Stage.PRODUCTION, new KvBridgeModule(settings, registry, embedder));
    }

    // Stage.PRODUCTION builds singletons eagerly, so a plugin's typed error arrives wrapped in Guice's
    private static RuntimeException unwrap(RuntimeException guiceError, Collection<Message> messages)
    {
        for (Message message : messages) {
            for (Throwable cause = message.getCause(); cause != null; cause = cause.getCause()) {
                if (cause instanceof KvBridgeException typed) {
                    return typed;
                }
            }
        }
        return guiceError;
    }
}
