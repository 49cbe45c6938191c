package io.kvbridge.backend.nixl;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.transport.UcxLanes;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The plugin as the core sees it: found by ServiceLoader, honest about availability, strict about options. */
@Timeout(30)
final class NixlBackendFactoryTest
{
    @RegisterExtension
    final FakeLeakCheck leakCheck = new FakeLeakCheck(FakeNixl.HEAD);

    @TempDir
    Path empty;

    @Test
    void serviceLoaderFindsTheNixlFactory()
    {
        TransferBackendFactory factory = ServiceLoader.load(TransferBackendFactory.class).stream().map(ServiceLoader.Provider::get)
                .filter(candidate -> candidate.name().equals("nixl")).findFirst().orElseThrow();
        assertEquals(NixlBackendFactory.class, factory.getClass());
        assertEquals(Spi.VERSION, factory.spiVersion());
    }

    @Test
    void withoutALibraryNixlIsUnavailableAndSaysWhere()
    {
        Availability availability = new NixlBackendFactory(empty.toString(), false).probe();
        assertFalse(availability.available());
        assertTrue(availability.reasons().getFirst().contains("libnixl_capi.so not found at " + empty.resolve("libnixl_capi.so")), availability.reasons()::toString);
    }

    @Test
    void onAMachineWithoutNixlTheDefaultProbeDoesNotPretend()
    {
        assumeTrue(System.getProperty(NixlBackendFactory.LIBRARY_PROPERTY) == null, "a library is configured");
        NixlLibraryLocator.Location location = NixlLibraryLocator.locate(null, System.getenv(), System.getProperty("java.library.path"),
                NixlLibraryLocator.SYSTEM_DIRECTORIES, NixlLibraryLocator.LD_SO_CONF_DIRECTORY);
        assumeTrue(location.library().isEmpty(), () -> "this machine has a libnixl_capi.so at " + location.library().get());
        Availability availability = new NixlBackendFactory().probe();
        assertFalse(availability.available());
        assertTrue(availability.reasons().stream().anyMatch(reason -> reason.startsWith("libnixl_capi.so not found (searched")), availability.reasons()::toString);
    }

    @Test
    void theFakeIsMarkedAsSuchAndNeedsPermission()
    {
        Availability refused = new NixlBackendFactory(FakeNixl.HEAD.library().toString(), false).probe();
        assertFalse(refused.available());
        assertTrue(refused.details().get("implementation").contains("test fake"));
        Availability allowed = FakeNixl.HEAD.factory().probe();
        assertTrue(allowed.available(), allowed.reasons()::toString);
        assertEquals("UCX", allowed.details().get("plugins"));
        assertTrue(allowed.details().get("c-api").startsWith("after 1.4.0"));
        assertTrue(allowed.details().get("implementation").contains("nixl-capi-fake 1 api=head"));
        assertEquals(EnumSet.of(Capability.HOST_MEMORY, Capability.CROSS_PROCESS, Capability.PEER_FAILURE_DETECTION, Capability.COALESCING), allowed.capabilities());
        assertTrue(FakeNixl.V1_4.factory().probe().details().get("c-api").startsWith("0.10.1..1.4"));
    }

    @Test
    void aLibraryWithoutTheCApiIsUnavailableNamingWhatIsMissing()
    {
        Path libm = Path.of("/lib/x86_64-linux-gnu/libm.so.6");
        assumeTrue(libm.toFile().isFile(), "needs a shared library that is not NIXL");
        Availability availability = new NixlBackendFactory(libm.toString(), true).probe();
        assertFalse(availability.available());
        assertTrue(availability.reasons().getFirst().contains("lacks required C API functions"), availability.reasons()::toString);
    }

    @Test
    void probeNeverThrows()
    {
        assertDoesNotThrow(() -> assertFalse(new NixlBackendFactory("bad\0path", false).probe().available()));
    }

    @Test
    void everyBadOptionIsReportedAtOnce()
    {
        KvBridgeException e = assertCode(ErrorCode.CONFIG_INVALID,
                () -> FakeNixl.HEAD.factory().create(Map.of("max-in-flight", "0", "progress-thread", "maybe", "progress-delay-us", "-1", "bogus", "1"), () -> "a"));
        assertTrue(e.getMessage().contains("max-in-flight=0 is outside [1, 1048576]"), e.getMessage());
        assertTrue(e.getMessage().contains("progress-thread=maybe is not a boolean"), e.getMessage());
        assertTrue(e.getMessage().contains("progress-delay-us=-1 is outside [0, 1000000]"), e.getMessage());
        assertTrue(e.getMessage().contains("unknown option bogus"), e.getMessage());
    }

    @Test
    void ucxsTcpLaneIsRefusedUnlessAcceptedByTheOptionOrLeftOutOfUcxTls()
    {
        Map<String, String> withoutOptIn = new HashMap<>(FakeNixl.HEAD.options());
        withoutOptIn.remove(NixlUcxSettings.ALLOW_UNCHECKED_TCP_LANE);
        String tls = System.getenv(NixlUcxSettings.TLS_ENVIRONMENT);
        if (UcxLanes.mayUseTcp(tls == null ? "" : tls.strip())) {
            KvBridgeException e = assertCode(ErrorCode.CONFIG_INVALID, () -> FakeNixl.HEAD.factory().create(withoutOptIn, () -> "tcp-refused"));
            assertTrue(e.getMessage().contains("allow-unchecked-tcp-lane=true") && e.getMessage().contains("UCX's tcp transport"), e.getMessage());
        }
        Map<String, String> optedIn = new HashMap<>(withoutOptIn);
        optedIn.put(NixlUcxSettings.ALLOW_UNCHECKED_TCP_LANE, "true");
        try (TransferBackend backend = FakeNixl.HEAD.factory().create(optedIn, () -> "tcp-accepted-" + System.nanoTime())) {
            assertEquals("nixl", backend.name());
        }
        // the lanes UCX_TLS names decide without the option
        assertTrue(NixlUcxSettings.tcpLaneRefusal(false, null).contains("UCX_TLS unset"));
        assertTrue(NixlUcxSettings.tcpLaneRefusal(false, "tcp,sm").contains("UCX_TLS=tcp,sm"));
        assertTrue(NixlUcxSettings.tcpLaneRefusal(false, "all") != null);
        assertTrue(NixlUcxSettings.tcpLaneRefusal(false, "^sm") != null, "excluding shared memory leaves tcp in");
        assertNull(NixlUcxSettings.tcpLaneRefusal(false, "rc,sm"));
        assertNull(NixlUcxSettings.tcpLaneRefusal(false, "^tcp"));
        assertNull(NixlUcxSettings.tcpLaneRefusal(true, "tcp"));
    }

    @Test
    void createWhereNixlCannotRunSaysWhy()
    {
        KvBridgeException e = assertCode(ErrorCode.BACKEND_UNAVAILABLE, () -> new NixlBackendFactory(empty.toString(), false)
                .create(Map.of(NixlUcxSettings.ALLOW_UNCHECKED_TCP_LANE, "true"), () -> "a"));
        assertTrue(e.getMessage().contains("libnixl_capi.so not found"), e.getMessage());
    }

    @Test
    void optionsChooseTheLibraryAndCloseIsIdempotent()
    {
        TransferBackend backend = new NixlBackendFactory(empty.toString(), false).create(FakeNixl.HEAD.options(), () -> "options-" + System.nanoTime());
        assertEquals("nixl", backend.name());
        assertEquals(BackendResources.NONE, backend.resources());
        backend.close();
        backend.close();
        assertEquals(BackendResources.NONE, backend.resources());
        assertCode(ErrorCode.CLOSED, backend::localMetadata);
    }
}
