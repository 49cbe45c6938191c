package io.kvbridge.core.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.PluginInfo;
import io.kvbridge.api.PluginKind;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.discovery.DirectoryConfig;
import io.kvbridge.spi.discovery.DirectoryFactory;
import io.kvbridge.spi.discovery.EngineDirectory;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

final class PluginRegistryTest
{
    /** A transport plugin whose name, version, probe and priority a test chooses. */
    private record TestingTransport(String name, int spiVersion, Availability availability, int priority) implements TransferBackendFactory
    {
        @Override
        public Availability probe()
        {
            if (availability == null) {
                throw new IllegalStateException("library exploded");
            }
            return availability;
        }

        @Override
        public TransferBackend create(Map<String, String> config, BackendContext context)
        {
            throw new KvBridgeException(ErrorCode.UNSUPPORTED, "not created in these tests");
        }
    }

    private record TestingLayout(String name, int spiVersion) implements CacheLayoutFactory
    {
        @Override
        public CacheLayout create(Map<String, String> config)
        {
            throw new KvBridgeException(ErrorCode.UNSUPPORTED, "not created in these tests");
        }
    }

    /** A discovery plugin whose scheme and version a test chooses. */
    private record TestingDirectory(String scheme, int spiVersion) implements DirectoryFactory
    {
        @Override
        public EngineDirectory open(DirectoryConfig config)
        {
            throw new KvBridgeException(ErrorCode.UNSUPPORTED, "not opened in these tests");
        }
    }

    private static TestingTransport available(String name, int priority)
    {
        return new TestingTransport(name, Spi.VERSION, Availability.available(java.util.Set.of(), Map.of()), priority);
    }

    private static TestingTransport unavailable(String name, String... reasons)
    {
        return new TestingTransport(name, Spi.VERSION, Availability.unavailable(List.of(reasons), Map.of()), 100);
    }

    private static KvBridgeException assertCode(ErrorCode code, org.junit.jupiter.api.function.Executable executable)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, executable);
        assertEquals(code, e.code(), e.getMessage());
        return e;
    }

    @Test
    void discoversLocalFromTheClassPath()
    {
        PluginRegistry registry = PluginRegistry.discover(getClass().getClassLoader());
        assertTrue(registry.transports().containsKey("local"));
        assertTrue(registry.transports().get("local").availability().available());
        assertEquals("local", registry.selectTransport("local").name());
    }

    @Test
    void duplicateNamesFailNamingBothClasses()
    {
        KvBridgeException e = assertCode(ErrorCode.PLUGIN_DUPLICATE,
                () -> new PluginRegistry(List.of(new LocalBackendFactory(), available("local", 0)), List.of()));
        assertTrue(e.getMessage().contains(LocalBackendFactory.class.getName()), e.getMessage());
        assertTrue(e.getMessage().contains(TestingTransport.class.getName()), e.getMessage());
        assertCode(ErrorCode.PLUGIN_DUPLICATE,
                () -> new PluginRegistry(List.of(), List.of(new TestingLayout("hma", Spi.VERSION), new TestingLayout("hma", Spi.VERSION))));
    }

    @Test
    void aTransportBuiltForSpiVersion2IsRefusedNamingBothVersions()
    {
        // version 2 had the two positional post overloads that version 3 replaced with post(TransferRequest)
        KvBridgeException e = assertCode(ErrorCode.PLUGIN_SPI_MISMATCH,
                () -> new PluginRegistry(List.of(available("tcp", 5), new TestingTransport("old-tcp", 2, null, 0)), List.of()));
        assertTrue(e.getMessage().contains("transport plugin 'old-tcp'"), e.getMessage());
        assertTrue(e.getMessage().contains("was built for SPI version 2 but this kvbridge-api has SPI version 3"), e.getMessage());
        assertTrue(e.getMessage().contains("see the SPI migration notes in docs/architecture.md"), e.getMessage());
    }

    @Test
    void spiVersionMismatchNamesBothVersions()
    {
        KvBridgeException e = assertCode(ErrorCode.PLUGIN_SPI_MISMATCH,
                () -> new PluginRegistry(List.of(new TestingTransport("old", Spi.VERSION + 7, null, 0)), List.of()));
        assertTrue(e.getMessage().contains("SPI version " + (Spi.VERSION + 7)), e.getMessage());
        assertTrue(e.getMessage().contains("SPI version " + Spi.VERSION), e.getMessage());
        assertCode(ErrorCode.PLUGIN_SPI_MISMATCH, () -> new PluginRegistry(List.of(), List.of(new TestingLayout("mla", 0))));
    }

    @Test
    void malformedNamesAreRejected()
    {
        for (String name : new String[] {"", "UCX", "1ucx", "u cx", "a".repeat(65), "ucx_2"}) {
            assertCode(ErrorCode.PLUGIN_NAME_INVALID, () -> new PluginRegistry(List.of(available(name, 0)), List.of()));
        }
        new PluginRegistry(List.of(available("cuda-ipc", 0), available("a".repeat(64), 0)), List.of());
    }

    @Test
    void unknownNameListsTheAvailableOnes()
    {
        PluginRegistry registry = new PluginRegistry(List.of(available("alpha", 0), available("beta", 0), unavailable("gamma", "no library")), List.of());
        KvBridgeException e = assertCode(ErrorCode.PLUGIN_UNKNOWN, () -> registry.selectTransport("delta"));
        assertTrue(e.getMessage().contains("[alpha, beta]"), e.getMessage());
        KvBridgeException layout = assertCode(ErrorCode.PLUGIN_UNKNOWN, () -> registry.layout("hma"));
        assertTrue(layout.getMessage().contains("[]"), layout.getMessage());
    }

    @Test
    void unavailableTransportReportsEveryReason()
    {
        PluginRegistry registry = new PluginRegistry(List.of(unavailable("ucx", "install libucx0", "pass --enable-native-access=ALL-UNNAMED")), List.of());
        KvBridgeException e = assertCode(ErrorCode.BACKEND_UNAVAILABLE, () -> registry.selectTransport("ucx"));
        assertTrue(e.getMessage().contains("install libucx0") && e.getMessage().contains("--enable-native-access"), e.getMessage());
        assertCode(ErrorCode.BACKEND_UNAVAILABLE, () -> registry.selectTransport("auto"));
    }

    @Test
    void selectingByNameProbesThatTransportOnlyAndOnce()
    {
        AtomicInteger alphaProbes = new AtomicInteger();
        AtomicInteger betaProbes = new AtomicInteger();
        PluginRegistry registry = new PluginRegistry(List.of(counted("alpha", alphaProbes), counted("beta", betaProbes)), List.of());
        assertEquals(0, alphaProbes.get() + betaProbes.get(), "discovery probes nothing");
        assertEquals("beta", registry.selectTransport("beta").name());
        assertEquals("beta", registry.selectTransport("beta").name());
        assertEquals(0, alphaProbes.get(), "a transport nobody asked about is never probed, so it loads no native library");
        assertEquals(1, betaProbes.get(), "each transport is probed once");
        assertTrue(registry.summary().contains("alpha (not probed)"), registry.summary());
        registry.selectTransport("auto");
        assertEquals(1, alphaProbes.get());
        assertEquals(1, betaProbes.get());
    }

    private static TransferBackendFactory counted(String name, AtomicInteger probes)
    {
        TestingTransport inner = available(name, 0);
        return new TransferBackendFactory()
        {
            @Override
            public String name()
            {
                return inner.name();
            }

            @Override
            public int spiVersion()
            {
                return inner.spiVersion();
            }

            @Override
            public Availability probe()
            {
                probes.incrementAndGet();
                return inner.probe();
            }

            @Override
            public TransferBackend create(Map<String, String> config, BackendContext context)
            {
                return inner.create(config, context);
            }
        };
    }

    @Test
    void probeThatThrowsBecomesAReason()
    {
        PluginRegistry registry = new PluginRegistry(List.of(new TestingTransport("fragile", Spi.VERSION, null, 0)), List.of());
        Availability availability = registry.transports().get("fragile").availability();
        assertFalse(availability.available());
        assertTrue(availability.reasons().getFirst().contains("library exploded"), availability.reasons().toString());
    }

    @Test
    void autoPicksTheHighestPriorityAvailableTransport()
    {
        PluginRegistry registry = new PluginRegistry(List.of(available("alpha", 0), available("beta", 5), unavailable("gamma", "no device")), List.of());
        assertEquals("beta", registry.selectTransport("auto").name());
        PluginRegistry tie = new PluginRegistry(List.of(available("zeta", 1), available("eta", 1)), List.of());
        assertEquals("eta", tie.selectTransport("auto").name(), "ties go to the first name in order");
    }

    @Test
    void describeListsTransportsThenLayoutsSortedByName()
    {
        PluginRegistry registry = new PluginRegistry(List.of(unavailable("zeta", "why"), available("alpha", 0)),
                List.of(new TestingLayout("per-layer", Spi.VERSION), new TestingLayout("hma", Spi.VERSION)));
        List<PluginInfo> plugins = registry.describe();
        assertEquals(List.of("alpha", "zeta", "hma", "per-layer"), plugins.stream().map(PluginInfo::name).toList());
        assertEquals(List.of(PluginKind.TRANSPORT, PluginKind.TRANSPORT, PluginKind.LAYOUT, PluginKind.LAYOUT), plugins.stream().map(PluginInfo::kind).toList());
        assertEquals(List.of("why"), plugins.get(1).reasons());
        assertEquals("transports [alpha, zeta (unavailable)]; layouts [hma, per-layer]", registry.summary());
    }

    @Test
    void discoveryPluginsAreCheckedLikeEveryOtherPlugin()
    {
        KvBridgeException old = assertCode(ErrorCode.PLUGIN_SPI_MISMATCH,
                () -> new PluginRegistry(List.of(), List.of(), List.of(new TestingDirectory("etcd", Spi.VERSION + 3))));
        assertTrue(old.getMessage().contains("discovery plugin 'etcd' (" + TestingDirectory.class.getName()), old.getMessage());
        assertTrue(old.getMessage().contains("built for SPI version " + (Spi.VERSION + 3) + " but this kvbridge-api has SPI version " + Spi.VERSION),
                old.getMessage());
        KvBridgeException twice = assertCode(ErrorCode.PLUGIN_DUPLICATE,
                () -> new PluginRegistry(List.of(), List.of(), List.of(new TestingDirectory("etcd", Spi.VERSION), new TestingDirectory("etcd", Spi.VERSION))));
        assertTrue(twice.getMessage().contains("two discovery plugins are named 'etcd'"), twice.getMessage());
        for (String scheme : new String[] {"", "ETCD", "zk+tls", "9p"}) {
            assertCode(ErrorCode.PLUGIN_NAME_INVALID, () -> new PluginRegistry(List.of(), List.of(), List.of(new TestingDirectory(scheme, Spi.VERSION))));
        }
    }

    @Test
    void aDiscoveryPluginBuiltBeforeItsSpiHadAVersionIsAMismatch()
    {
        // what the JVM does when a class compiled against the older interface lacks spiVersion()
        DirectoryFactory older = (DirectoryFactory) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DirectoryFactory.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "scheme" -> "etcd";
                    case "spiVersion" -> throw new AbstractMethodError("Receiver class does not define or inherit an implementation of spiVersion()");
                    default -> throw new UnsupportedOperationException(method.getName());
                });
        KvBridgeException e = assertCode(ErrorCode.PLUGIN_SPI_MISMATCH, () -> new PluginRegistry(List.of(), List.of(), List.of(older)));
        assertTrue(e.getMessage().contains("built for an SPI without DirectoryFactory.spiVersion()") && e.getMessage().contains("SPI version " + Spi.VERSION),
                e.getMessage());
    }

    @Test
    void aDiscoverySchemeIsFoundOrNamedWithTheOnesAvailable()
    {
        TestingDirectory etcd = new TestingDirectory("etcd", Spi.VERSION);
        PluginRegistry registry = new PluginRegistry(List.of(available("alpha", 0)), List.of(new TestingLayout("hma", Spi.VERSION)),
                List.of(new TestingDirectory("zk", Spi.VERSION), etcd));
        assertEquals(etcd, registry.directory("etcd"));
        assertEquals(List.of("etcd", "zk"), List.copyOf(registry.directories().keySet()));
        KvBridgeException unknown = assertCode(ErrorCode.PLUGIN_UNKNOWN, () -> registry.directory("consul"));
        assertTrue(unknown.getMessage().contains("no discovery plugin serves the scheme 'consul'; available: [etcd, zk]"), unknown.getMessage());
        assertEquals("transports [alpha (not probed)]; layouts [hma]; discovery [etcd, zk]", registry.summary());
        List<PluginInfo> plugins = registry.describe();
        assertEquals(List.of("alpha", "hma", "etcd", "zk"), plugins.stream().map(PluginInfo::name).toList());
        assertEquals(List.of(PluginKind.TRANSPORT, PluginKind.LAYOUT, PluginKind.DISCOVERY, PluginKind.DISCOVERY), plugins.stream().map(PluginInfo::kind).toList());
        assertEquals(TestingDirectory.class.getName(), plugins.get(2).implementation());
    }

    @Test
    void discoverFindsTheEtcdPluginOnTheClassPath()
    {
        PluginRegistry registry = PluginRegistry.discover(getClass().getClassLoader());
        assertEquals("io.kvbridge.discovery.etcd.EtcdDirectoryFactory", registry.directory("etcd").getClass().getName());
    }
}
