package io.kvbridge.core;

import com.google.inject.CreationException;
import com.google.inject.Guice;
import com.google.inject.Injector;
import com.google.inject.ProvisionException;
import com.google.inject.Stage;
import com.google.inject.spi.Message;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.KvBridgeRuntime;
import io.kvbridge.core.config.BridgeConfig;
import io.kvbridge.core.config.Configuration;
import io.kvbridge.core.config.TlsFiles;
import io.kvbridge.core.config.TlsLoader;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
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
        // precedence: the builder's explicit calls, then the environment, then the document, then the defaults
        Configuration.Resolved resolved = Configuration.resolve(builder.configText().orElse(null), builder.configFile().orElse(null),
                builder.environment()).orThrow();
        BridgeConfig config = resolved.config();
        PluginRegistry registry = PluginRegistry.discover(CoreKvBridgeRuntime.class.getClassLoader());
        String transport = builder.isExplicit("transport") || config.transport() == null ? builder.transport() : config.transport();
        String agentName = builder.isExplicit("agentName") || config.agentName() == null ? builder.agentName() : config.agentName();
        if (agentName.isEmpty()) {
            agentName = "kvbridge-" + ProcessHandle.current().pid() + "-" + AGENTS.incrementAndGet();
        }
        byte[] secret = builder.isExplicit("sideChannelSecret") || resolved.secret() == null ? builder.sideChannelSecret() : resolved.secret();
        SideChannelTls tls = resolved.tls();
        if (builder.isExplicit("sideChannelTls")) {
            KvBridge.Builder.TlsFiles given = builder.sideChannelTls().orElseThrow();
            List<String> problems = new ArrayList<>();
            tls = TlsLoader.load(config.tls().overriddenBy(new TlsFiles(given.certFile(), given.keyFile(), null, null, given.caFile(), null, null,
                    given.requireClientCertificates() ? SideChannelTls.ClientAuth.REQUIRE : SideChannelTls.ClientAuth.NONE, null)), problems);
            new Configuration.Resolved(config, secret, problems, tls).orThrow();
        }
        boolean allowUnauthenticated = builder.isExplicit("allowUnauthenticatedSideChannel") || config.allowUnauthenticated() == null
                ? builder.allowsUnauthenticatedSideChannel() : config.allowUnauthenticated();
        EmbedderServices embedder = EmbedderServices.from(builder);
        return start(new BridgeSettings(transport, agentName, builder.transportConfig(), secret, BridgeSettings.SUMMARY_INTERVAL, config, tls,
                allowUnauthenticated), registry, embedder);
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
