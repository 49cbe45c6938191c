package io.kvbridge.backend.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.backend.nixl.ffm.LoadedUcx;
import io.kvbridge.backend.nixl.ffm.NixlApiLevel;
import io.kvbridge.backend.nixl.ffm.NixlLibraryReport;
import io.kvbridge.backend.nixl.ffm.NixlPluginReport;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.Capability;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The availability decision, from facts alone: every reason against running is named with its fix. */
@Timeout(10)
final class NixlProbeTest
{
    private static final Path LIBRARY = Path.of("/opt/nixl/lib/libnixl_capi.so");
    private static final NixlLibraryLocator.Location FOUND = new NixlLibraryLocator.Location(Optional.of(LIBRARY), List.of(LIBRARY), false);
    private static final NixlLibraryReport REAL = new NixlLibraryReport(LIBRARY, List.of(), false, Optional.empty(), Optional.of(NixlApiLevel.HEAD));
    private static final NixlLibraryReport FAKE = new NixlLibraryReport(LIBRARY, List.of(), true, Optional.of("nixl-capi-fake 1"),
            Optional.of(NixlApiLevel.HEAD));
    private static final NixlPluginReport UCX = new NixlPluginReport(List.of("UCX", "POSIX"), Set.of(MemoryKind.HOST, MemoryKind.DEVICE), List.of());

    private static final LoadedUcx CUDA_UCX = new LoadedUcx(Path.of("/opt/ucx/lib/libucp.so.0.0.0"), Optional.of("1.22.0"), true);

    private static NixlProbe.Facts facts(boolean nativeAccess, NixlLibraryReport library, NixlPluginReport plugins, String signals, boolean allowFake)
    {
        return new NixlProbe.Facts(nativeAccess, FOUND, Optional.of(library), Optional.of("1.4.0"), Optional.ofNullable(plugins), List.of(CUDA_UCX), Optional.ofNullable(signals),
                allowFake);
    }

    private static void assertReason(Availability availability, String fragment)
    {
        assertFalse(availability.available());
        assertTrue(availability.reasons().stream().anyMatch(reason -> reason.contains(fragment)),
                () -> "no reason mentions '" + fragment + "': " + availability.reasons());
    }

    @Test
    void realNixlWithUcxIsAvailableWithWhatUcxRegisters()
    {
        Availability availability = NixlProbe.assess(facts(true, REAL, UCX, "", false));
        assertTrue(availability.available(), availability.reasons()::toString);
        assertEquals(EnumSet.of(Capability.HOST_MEMORY, Capability.DEVICE_MEMORY, Capability.CROSS_PROCESS, Capability.CROSS_HOST,
                Capability.PEER_FAILURE_DETECTION, Capability.COALESCING), availability.capabilities());
        assertEquals("NIXL", availability.details().get("implementation"));
        assertEquals("1.4.0", availability.details().get("nixl-version"));
        assertEquals("UCX, POSIX", availability.details().get("plugins"));
        assertEquals(LIBRARY.toString(), availability.details().get("library"));
    }

    @Test
    void everyReasonIsNamedAtOnce()
    {
        NixlPluginReport noUcx = new NixlPluginReport(List.of("POSIX"), Set.of(), List.of());
        Availability availability = NixlProbe.assess(facts(false, REAL, noUcx, null, false));
        assertReason(availability, "--enable-native-access=ALL-UNNAMED");
        assertReason(availability, "UCX_ERROR_SIGNALS is unset");
        assertReason(availability, "NIXL offers no UCX plugin (found: POSIX); set NIXL_PLUGIN_DIR");
        assertEquals(3, availability.reasons().size(), availability.reasons()::toString);
    }

    @Test
    void ucxErrorSignalsMustBeEmptyForRealNixl()
    {
        assertReason(NixlProbe.assess(facts(true, REAL, UCX, "SIGSEGV,SIGBUS", false)), "UCX_ERROR_SIGNALS is 'SIGSEGV,SIGBUS'");
        assertTrue(NixlProbe.assess(facts(true, FAKE, UCX, "SIGSEGV", true)).available(), "the fake loads no UCX, so the variable does not matter");
    }

    @Test
    void fakeIsMarkedAndRefusedUnlessAllowed()
    {
        Availability refused = NixlProbe.assess(facts(true, FAKE, UCX, null, false));
        assertReason(refused, "kvbridge's test fake of NIXL (nixl_capi_is_stub() returned true)");
        assertReason(refused, NixlBackendFactory.ALLOW_FAKE_PROPERTY + "=true");
        assertTrue(refused.details().get("implementation").startsWith("kvbridge test fake, not NIXL"));
        Availability allowed = NixlProbe.assess(facts(true, FAKE, UCX, null, true));
        assertTrue(allowed.available());
        assertEquals(EnumSet.of(Capability.HOST_MEMORY, Capability.CROSS_PROCESS, Capability.PEER_FAILURE_DETECTION, Capability.COALESCING), allowed.capabilities(),
                "the fake claims neither device memory nor other hosts");
    }

    @Test
    void stubThatReachesNoNixlIsUnavailable()
    {
        NixlLibraryReport stub = new NixlLibraryReport(LIBRARY, List.of(), true, Optional.empty(), Optional.of(NixlApiLevel.V1_4));
        assertReason(NixlProbe.assess(facts(true, stub, null, "", true)), "a stub of NIXL's C API");
    }

    @Test
    void libraryAndPluginProblemsAreReasons()
    {
        NixlLibraryReport broken = new NixlLibraryReport(LIBRARY, List.of("lacks required C API functions [nixl_capi_make_xfer_req]"), false,
                Optional.empty(), Optional.empty());
        assertReason(NixlProbe.assess(facts(true, broken, null, "", false)), "lacks required C API functions");
        NixlPluginReport failing = new NixlPluginReport(List.of("UCX"), Set.of(), List.of("the UCX plugin is listed but does not load"));
        assertReason(NixlProbe.assess(facts(true, REAL, failing, "", false)), "does not load");
    }

    @Test
    void missingLibraryNamesWhereItWasLookedFor()
    {
        NixlLibraryLocator.Location searched = new NixlLibraryLocator.Location(Optional.empty(),
                List.of(Path.of("/a/libnixl_capi.so"), Path.of("/b/libnixl_capi.so")), false);
        Availability availability = NixlProbe.assess(new NixlProbe.Facts(true, searched, Optional.empty(), Optional.empty(), Optional.empty(),
                List.of(), Optional.empty(), false));
        assertReason(availability, "libnixl_capi.so not found (searched 2 directories: /a, /b)");
        assertReason(availability, "-D" + NixlBackendFactory.LIBRARY_PROPERTY);
        NixlLibraryLocator.Location configured = new NixlLibraryLocator.Location(Optional.empty(), List.of(Path.of("/x/libnixl_capi.so")), true);
        assertReason(NixlProbe.assess(new NixlProbe.Facts(true, configured, Optional.empty(), Optional.empty(), Optional.empty(), List.of(), Optional.empty(),
                false)),
                "not found at /x/libnixl_capi.so");
    }

    @Test
    void aUcxOlderThanNixlExpectsOrASecondUcxIsRefusedWithTheFix()
    {
        LoadedUcx debian = new LoadedUcx(Path.of("/usr/lib/x86_64-linux-gnu/libucp.so.0.0.0"), Optional.of("1.13.1"), false);
        LoadedUcx own = new LoadedUcx(Path.of("/opt/ucx/lib/libucp.so.0.0.0"), Optional.of("1.22.0"), false);
        Availability old = NixlProbe.assess(withUcx(List.of(debian)));
        assertReason(old, "NIXL's UCX plugin runs on /usr/lib/x86_64-linux-gnu/libucp.so.0.0.0 (UCX 1.13.1), older than the UCX 1.19");
        assertReason(old, "-Dkvbridge.ucx.enabled=false");
        assertReason(NixlProbe.assess(withUcx(List.of(own, debian))), "two UCX libraries are loaded in this process");
        Availability good = NixlProbe.assess(withUcx(List.of(own)));
        assertTrue(good.available(), good.reasons()::toString);
        assertEquals("/opt/ucx/lib/libucp.so.0.0.0 (UCX 1.22.0)", good.details().get("ucx-library"));
        assertTrue(NixlProbe.assess(withUcx(List.of(new LoadedUcx(debian.library(), Optional.empty(), false)))).available(),
                "an unknown version decides nothing");
        assertFalse(good.capabilities().contains(Capability.DEVICE_MEMORY), "NIXL lists VRAM, but this UCX has no CUDA module");
        assertTrue(good.details().get("device-memory").contains("no CUDA module"), good.details()::toString);
        assertTrue(NixlProbe.assess(withUcx(List.of(CUDA_UCX))).capabilities().contains(Capability.DEVICE_MEMORY));
    }

    private static NixlProbe.Facts withUcx(List<LoadedUcx> loaded)
    {
        return new NixlProbe.Facts(true, FOUND, Optional.of(REAL), Optional.of("1.4.0"), Optional.of(UCX), loaded, Optional.of(""), false);
    }

    @Test
    void aClosedTargetIsFencedOnlyWhereUcxCannotUseCma()
    {
        for (String unfenced : new String[] {null, "", "all", "tcp,cma", "sm,tcp", "shm", "^tcp", "^posix,sysv"}) {
            assertTrue(NixlProbe.closedTargetFence(unfenced).startsWith("none: UCX may write with cma"), () -> "UCX_TLS=" + unfenced);
        }
        for (String fenced : new String[] {"tcp", "^cma", "^ cma", "rc,ud,self", "posix,sysv,tcp", "^sm"}) {
            assertTrue(NixlProbe.closedTargetFence(fenced).startsWith("registration (UCX_TLS=" + fenced), () -> "UCX_TLS=" + fenced);
        }
        assertTrue(NixlProbe.assess(facts(true, FAKE, UCX, "", true)).details().get(NixlProbe.CLOSED_TARGET_FENCE).startsWith("registration"));
    }
}
