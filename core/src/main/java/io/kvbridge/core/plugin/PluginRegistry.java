package io.kvbridge.core.plugin;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableList;
import io.kvbridge.api.PluginInfo;
import io.kvbridge.api.PluginKind;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.discovery.DirectoryFactory;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * The transports, layouts and discovery plugins found on the class or module path, validated once:
 * names (a discovery plugin's is its scheme) follow the rule, no two plugins of a kind share a name,
 * and every plugin was built against this SPI version. Each
 * transport is probed at most once, when first asked about: selecting one by name probes that one
 * only, so no other transport's native library is loaded; {@code auto} and {@link #describe()}
 * probe them all.
 */
public final class PluginRegistry
{
    private final Map<String, DiscoveredTransport> transports;
    private final Map<String, CacheLayoutFactory> layouts;
    private final Map<String, DirectoryFactory> directories;

    /**
     * Validates discovered transports and layouts, with no discovery plugin; probes nothing yet.
     *
     * @param transportFactories transport factories, in discovery order.
     * @param layoutFactories layout factories, in discovery order.
     * @throws KvBridgeException {@code PLUGIN_NAME_INVALID}, {@code PLUGIN_DUPLICATE} or
     *     {@code PLUGIN_SPI_MISMATCH}, naming both sides.
     */
    public PluginRegistry(Iterable<TransferBackendFactory> transportFactories, Iterable<CacheLayoutFactory> layoutFactories)
    {
        this(transportFactories, layoutFactories, List.of());
    }

    /**
     * Validates discovered factories; probes nothing and opens nothing yet.
     *
     * @param transportFactories transport factories, in discovery order.
     * @param layoutFactories layout factories, in discovery order.
     * @param directoryFactories discovery plugins, in discovery order.
     * @throws KvBridgeException {@code PLUGIN_NAME_INVALID}, {@code PLUGIN_DUPLICATE} or
     *     {@code PLUGIN_SPI_MISMATCH}, naming both sides.
     */
    public PluginRegistry(Iterable<TransferBackendFactory> transportFactories, Iterable<CacheLayoutFactory> layoutFactories,
            Iterable<DirectoryFactory> directoryFactories)
    {
        Map<String, DiscoveredTransport> foundTransports = new TreeMap<>();
        for (TransferBackendFactory factory : transportFactories) {
            checkPlugin(PluginKind.TRANSPORT, factory.name(), factory.spiVersion(), factory.getClass());
            DiscoveredTransport previous = foundTransports.get(factory.name());
            if (previous != null) {
                throw duplicate(PluginKind.TRANSPORT, factory.name(), previous.factory().getClass(), factory.getClass());
            }
            foundTransports.put(factory.name(), new DiscoveredTransport(factory, sourceOf(factory.getClass())));
        }
        Map<String, CacheLayoutFactory> foundLayouts = new TreeMap<>();
        for (CacheLayoutFactory factory : layoutFactories) {
            checkPlugin(PluginKind.LAYOUT, factory.name(), factory.spiVersion(), factory.getClass());
            CacheLayoutFactory previous = foundLayouts.putIfAbsent(factory.name(), factory);
            if (previous != null) {
                throw duplicate(PluginKind.LAYOUT, factory.name(), previous.getClass(), factory.getClass());
            }
        }
        Map<String, DirectoryFactory> foundDirectories = new TreeMap<>();
        for (DirectoryFactory factory : directoryFactories) {
            checkPlugin(PluginKind.DISCOVERY, factory.scheme(), spiVersionOf(factory), factory.getClass());
            DirectoryFactory previous = foundDirectories.putIfAbsent(factory.scheme(), factory);
            if (previous != null) {
                throw duplicate(PluginKind.DISCOVERY, factory.scheme(), previous.getClass(), factory.getClass());
            }
        }
        this.transports = java.util.Collections.unmodifiableMap(foundTransports);
        this.layouts = java.util.Collections.unmodifiableMap(foundLayouts);
        this.directories = java.util.Collections.unmodifiableMap(foundDirectories);
    }

    /**
     * Discovers the plugins visible to a class loader.
     *
     * @param classLoader where to look.
     * @return the registry.
     */
    public static PluginRegistry discover(ClassLoader classLoader)
    {
        return new PluginRegistry(
                ServiceLoader.load(TransferBackendFactory.class, classLoader),
                ServiceLoader.load(CacheLayoutFactory.class, classLoader),
                ServiceLoader.load(DirectoryFactory.class, classLoader));
    }

    /** {@return the transports by name, sorted} */
    public Map<String, DiscoveredTransport> transports()
    {
        return transports;
    }

    /** {@return the layout factories by name, sorted} */
    public Map<String, CacheLayoutFactory> layouts()
    {
        return layouts;
    }

    /** {@return the discovery plugins by the scheme they serve, sorted} */
    public Map<String, DirectoryFactory> directories()
    {
        return directories;
    }

    /**
     * Finds the discovery plugin of a scheme.
     *
     * @param scheme the scheme of a discovery location, for example {@code etcd}.
     * @return the factory.
     * @throws KvBridgeException {@code PLUGIN_UNKNOWN} listing the schemes found and the artifact to add.
     */
    public DirectoryFactory directory(String scheme)
    {
        DirectoryFactory factory = directories.get(requireNonNull(scheme, "scheme is null"));
        if (factory == null) {
            throw new KvBridgeException(ErrorCode.PLUGIN_UNKNOWN, "no discovery plugin serves the scheme '" + scheme + "'; available: "
                    + directories.keySet() + " (for etcd add kvbridge-discovery-etcd to the class path)");
        }
        return factory;
    }

    /**
     * Selects a transport.
     *
     * @param name a transport name, or {@code auto} for the available one with the highest
     *     priority (ties broken by name).
     * @return the selected transport.
     * @throws KvBridgeException {@code PLUGIN_UNKNOWN} listing the known names, or
     *     {@code BACKEND_UNAVAILABLE} with every reason the named one cannot run.
     */
    public DiscoveredTransport selectTransport(String name)
    {
        requireNonNull(name, "name is null");
        if (name.equals("auto")) {
            return transports.values().stream()
                    .filter(transport -> transport.availability().available())
                    .max(Comparator.comparingInt((DiscoveredTransport transport) -> transport.factory().priority())
                            .thenComparing(DiscoveredTransport::name, Comparator.reverseOrder()))
                    .orElseThrow(() -> new KvBridgeException(ErrorCode.BACKEND_UNAVAILABLE,
                            "no transport can run here: " + describeTransports() + "; kvbridge-core provides 'local', check that its jar is on the class path"));
        }
        DiscoveredTransport transport = transports.get(name);
        if (transport == null) {
            throw new KvBridgeException(ErrorCode.PLUGIN_UNKNOWN, "no transport named '" + name + "'; available: "
                    + availableNames() + " (add the transport's jar to the class path to use another one)");
        }
        if (!transport.availability().available()) {
            throw new KvBridgeException(ErrorCode.BACKEND_UNAVAILABLE, "transport '" + name + "' cannot run here: "
                    + String.join("; ", transport.availability().reasons()));
        }
        return transport;
    }

    /**
     * Finds a layout factory.
     *
     * @param name layout name.
     * @return the factory.
     * @throws KvBridgeException {@code PLUGIN_UNKNOWN} listing the known names.
     */
    public CacheLayoutFactory layout(String name)
    {
        CacheLayoutFactory factory = layouts.get(requireNonNull(name, "name is null"));
        if (factory == null) {
            throw new KvBridgeException(ErrorCode.PLUGIN_UNKNOWN, "no cache layout named '" + name + "'; available: " + layouts.keySet()
                    + " (add the layout's jar to the class path to use another one)");
        }
        return factory;
    }

    /**
     * Describes every plugin: transports, then layouts, then discovery plugins.
     *
     * @return one entry per plugin.
     */
    public List<PluginInfo> describe()
    {
        List<PluginInfo> result = new ArrayList<>();
        for (DiscoveredTransport transport : transports.values()) {
            Availability availability = transport.availability();
            result.add(new PluginInfo(PluginKind.TRANSPORT, transport.name(), availability.available(), availability.reasons(),
                    availability.capabilities(), availability.details(), transport.factory().getClass().getName(), transport.source()));
        }
        for (CacheLayoutFactory layout : layouts.values()) {
            Map<String, String> details = new LinkedHashMap<>();
            if (!layout.description().isEmpty()) {
                details.put("description", layout.description());
            }
            result.add(new PluginInfo(PluginKind.LAYOUT, layout.name(), true, List.of(), java.util.Set.of(), details,
                    layout.getClass().getName(), sourceOf(layout.getClass())));
        }
        for (DirectoryFactory directory : directories.values()) {
            result.add(new PluginInfo(PluginKind.DISCOVERY, directory.scheme(), true, List.of(), java.util.Set.of(), Map.of(),
                    directory.getClass().getName(), sourceOf(directory.getClass())));
        }
        return ImmutableList.copyOf(result);
    }

    /**
     * Summarises what was found, for the one INFO line logged at start.
     *
     * @return for example {@code transports [local, nixl (not probed), ucx (unavailable)]; layouts [hma, per-layer]};
     *     discovery schemes follow when a discovery plugin was found; it probes nothing itself.
     */
    public String summary()
    {
        String summary = "transports " + describeTransports() + "; layouts " + layouts.keySet();
        return directories.isEmpty() ? summary : summary + "; discovery " + directories.keySet();
    }

    private String describeTransports()
    {
        return transports.values().stream()
                .map(transport -> !transport.probed() ? transport.name() + " (not probed)"
                        : transport.availability().available() ? transport.name() : transport.name() + " (unavailable)")
                .collect(Collectors.joining(", ", "[", "]"));
    }

    private List<String> availableNames()
    {
        return transports.values().stream().filter(transport -> transport.availability().available()).map(DiscoveredTransport::name).toList();
    }

    private static void checkPlugin(PluginKind kind, String name, int spiVersion, Class<?> type)
    {
        if (!PluginNames.valid(name)) {
            throw new KvBridgeException(ErrorCode.PLUGIN_NAME_INVALID, kind.name().toLowerCase(java.util.Locale.ROOT) + " plugin " + type.getName()
                    + " (" + sourceOf(type) + ") has name '" + name + "'; a plugin name is " + PluginNames.rule());
        }
        if (spiVersion != Spi.VERSION) {
            throw new KvBridgeException(ErrorCode.PLUGIN_SPI_MISMATCH, kind.name().toLowerCase(java.util.Locale.ROOT) + " plugin '" + name + "' ("
                    + type.getName() + " from " + sourceOf(type) + ") was built for SPI version " + spiVersion + " but this kvbridge-api has SPI version "
                    + Spi.VERSION + "; use a plugin jar built for SPI version " + Spi.VERSION
                    + (spiVersion < Spi.VERSION ? " (rebuilding an older plugin: see the SPI migration notes in docs/architecture.md)" : ""));
        }
    }

    /** A discovery plugin compiled before {@link DirectoryFactory#spiVersion()} existed lacks the method: an older SPI. */
    private static int spiVersionOf(DirectoryFactory factory)
    {
        try {
            return factory.spiVersion();
        }
        catch (AbstractMethodError e) {
            throw new KvBridgeException(ErrorCode.PLUGIN_SPI_MISMATCH, "discovery plugin '" + factory.scheme() + "' (" + factory.getClass().getName()
                    + " from " + sourceOf(factory.getClass()) + ") was built for an SPI without DirectoryFactory.spiVersion() but this kvbridge-api has SPI version "
                    + Spi.VERSION + "; use a plugin jar built for SPI version " + Spi.VERSION, e);
        }
    }

    private static KvBridgeException duplicate(PluginKind kind, String name, Class<?> first, Class<?> second)
    {
        return new KvBridgeException(ErrorCode.PLUGIN_DUPLICATE, "two " + kind.name().toLowerCase(java.util.Locale.ROOT) + " plugins are named '" + name + "': "
                + first.getName() + " from " + sourceOf(first) + " and " + second.getName() + " from " + sourceOf(second)
                + "; remove one of the jars from the class path");
    }

    static String sourceOf(Class<?> type)
    {
        return Optional.ofNullable(type.getProtectionDomain().getCodeSource())
                .map(CodeSource::getLocation)
                .map(Object::toString)
                .orElse("unknown location");
    }
}
