package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.nixl.ffm.LoadedUcx;
import io.kvbridge.backend.nixl.ffm.Nixl;
import io.kvbridge.backend.nixl.ffm.NixlLibraryReport;
import io.kvbridge.backend.nixl.ffm.NixlPluginReport;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.transport.NativeLibrary;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Decides whether the {@code nixl} transport can run: gathers the facts (native access, where the
 * library is, what it is, which plugins it offers, the environment UCX needs) and turns them into
 * an availability that names every reason against it.
 */
final class NixlProbe
{
    // listing a library's plugins opens an agent and a UCX backend, with UCX's listening sockets on
    // every device while it lives, and its answer does not change while the process runs: once per library
    private static final Map<Path, NixlPluginReport> PLUGINS = new ConcurrentHashMap<>();

    private static final String IMPLEMENTATION = "implementation";
    private static final String REAL_NIXL = "NIXL";
    private static final int MAX_SEARCHED_SHOWN = 6;

    /**
     * Everything the decision depends on.
     *
     * @param nativeAccess whether this module may call native code.
     * @param location where the library was looked for and found.
     * @param library what loading it showed, when it was loaded.
     * @param version the NIXL version from its pkg-config file, when found.
     * @param plugins the plugins NIXL offers, when they were asked for.
     * @param loadedUcx the UCX libraries mapped into the process once the plugins were listed.
     * @param ucxErrorSignals the value of {@code UCX_ERROR_SIGNALS} in the environment, if set.
     * @param allowFake whether a test fake is acceptable.
     */
    record Facts(boolean nativeAccess, NixlLibraryLocator.Location location, Optional<NixlLibraryReport> library, Optional<String> version,
            Optional<NixlPluginReport> plugins, List<LoadedUcx> loadedUcx, Optional<String> ucxErrorSignals, boolean allowFake)
    {
        Facts
        {
            loadedUcx = List.copyOf(loadedUcx);
            requireNonNull(location, "location is null");
            requireNonNull(library, "library is null");
            requireNonNull(version, "version is null");
            requireNonNull(plugins, "plugins is null");
            requireNonNull(ucxErrorSignals, "ucxErrorSignals is null");
        }

        boolean fake()
        {
            return library.map(report -> report.stub() && report.fakeIdentity().isPresent()).orElse(false);
        }

        /** Loading UCX into a JVM is only safe with UCX's own error-signal handlers switched off. */
        boolean ucxMayLoad()
        {
            return fake() || ucxErrorSignals.equals(Optional.of(""));
        }
    }

    /**
     * The outcome of a probe.
     *
     * @param availability what the factory reports.
     * @param library the library to open when available.
     */
    record Result(Availability availability, Optional<Path> library)
    {
        /** {@return whether the library found is NIXL itself, not the test fake or a stub} */
        boolean realNixl()
        {
            return REAL_NIXL.equals(availability.details().get(IMPLEMENTATION));
        }
    }

    // NIXL 1.4.0's UCX plugin warns below this version (ucx_utils.cpp)
    /** The detail that says whether a closed target's memory is fenced off from its peers' late transfers. */
    static final String CLOSED_TARGET_FENCE = "closed-target-fence";
    private static final Set<String> CMA_NAMES = Set.of("cma", "sm", "shm", "all");
    private static final int MIN_UCX_MAJOR = 1;
    private static final int MIN_UCX_MINOR = 19;

    private NixlProbe()
    {
    }

    /**
     * Gathers the facts of this process and decides; with the kill switch set, nothing is located
     * or loaded.
     *
     * @param configuredLibrary a file or directory to use instead of searching, or null.
     * @param allowFake whether a test fake is acceptable.
     * @return the result.
     */
    static Result run(String configuredLibrary, boolean allowFake)
    {
        Optional<String> switchedOff = NixlAvailability.switchedOff();
        if (switchedOff.isPresent()) {
            return new Result(Availability.unavailable(List.of(switchedOff.get()), Map.of("enabled", "false")), Optional.empty());
        }
        boolean nativeAccess = NixlProbe.class.getModule().isNativeAccessEnabled();
        NixlLibraryLocator.Location location = NixlLibraryLocator.locate(configuredLibrary, System.getenv(), System.getProperty("java.library.path"),
                NixlLibraryLocator.SYSTEM_DIRECTORIES, NixlLibraryLocator.LD_SO_CONF_DIRECTORY);
        Optional<NixlLibraryReport> library = Optional.empty();
        Optional<String> version = Optional.empty();
        if (location.library().isPresent()) {
            version = NixlLibraryLocator.version(location.library().get());
            if (nativeAccess) {
                library = Optional.of(Nixl.inspect(location.library().get()));
            }
        }
        Optional<String> signals = Optional.ofNullable(System.getenv("UCX_ERROR_SIGNALS"));
        Facts withoutPlugins = new Facts(nativeAccess, location, library, version, Optional.empty(), List.of(), signals, allowFake);
        Optional<NixlPluginReport> plugins = Optional.empty();
        boolean loadedUsable = library.map(report -> report.loaded() && (!report.stub() || withoutPlugins.fake())).orElse(false);
        // a stub aborts on any call, and a real NIXL may load UCX while listing plugins
        if (loadedUsable && withoutPlugins.ucxMayLoad()) {
            plugins = Optional.of(PLUGINS.computeIfAbsent(location.library().get(), path -> Nixl.plugins(path, true)));
        }
        // listing the plugins loaded NIXL's UCX plugin, and with it whichever libucp the dynamic linker found
        List<LoadedUcx> loadedUcx = plugins.isPresent() ? LoadedUcx.inThisProcess() : List.of();
        Facts facts = new Facts(nativeAccess, location, library, version, plugins, loadedUcx, signals, allowFake);
        Availability availability = assess(facts);
        return new Result(availability, availability.available() ? location.library() : Optional.empty());
    }

    /**
     * Decides from facts alone.
     *
     * @param facts what was found.
     * @return the availability, with every reason against it and the details worth showing.
     */
    static Availability assess(Facts facts)
    {
        List<String> reasons = new ArrayList<>();
        Map<String, String> details = new LinkedHashMap<>();
        details.put("native-access", facts.nativeAccess() ? "enabled" : "not enabled");
        if (!facts.nativeAccess()) {
            reasons.add("native access is not enabled for kvbridge-backend-nixl: start the JVM with --enable-native-access="
                    + NativeLibrary.nativeAccessFlag(NixlProbe.class));
        }
        NixlLibraryLocator.Location location = facts.location();
        if (location.library().isEmpty()) {
            reasons.add(notFound(location));
            return Availability.unavailable(reasons, details);
        }
        Path path = location.library().get();
        details.put("library", path.toString());
        if (facts.library().isEmpty()) {
            return Availability.unavailable(reasons, details);
        }
        NixlLibraryReport library = facts.library().get();
        reasons.addAll(library.problems());
        boolean fake = facts.fake();
        if (fake) {
            details.put(IMPLEMENTATION, "kvbridge test fake, not NIXL (" + library.fakeIdentity().get() + ")");
            // the key every transport bound to a test fake sets, so that figures measured on it are labelled
            details.put("fake", "true");
            if (!facts.allowFake()) {
                reasons.add(path + " is kvbridge's test fake of NIXL (nixl_capi_is_stub() returned true): it moves bytes only between processes on one "
                        + "host and proves nothing about NIXL; install NIXL, or set -D" + NixlBackendFactory.ALLOW_FAKE_PROPERTY + "=true (option allow-fake=true) "
                        + "to use the fake for testing");
            }
        }
        else if (library.stub()) {
            details.put(IMPLEMENTATION, "stub");
            reasons.add(path + " is a stub of NIXL's C API (nixl_capi_is_stub() returned true) that could not reach a real NIXL; "
                    + "point " + NixlBackendFactory.LIBRARY_PROPERTY + " at the libnixl_capi.so of a NIXL installation");
        }
        else if (library.loaded()) {
            details.put(IMPLEMENTATION, REAL_NIXL);
        }
        library.apiLevel().ifPresent(level -> details.put("c-api", level.description()));
        details.put("nixl-version", facts.version().orElse(fake ? "none (fake)" : "unknown (the C API reports none and no nixl.pc was found next to the library)"));
        if (fake) {
            details.put("ucx-error-signals", "not needed (the fake loads no UCX)");
        }
        else {
            details.put("ucx-error-signals", facts.ucxErrorSignals().map(value -> "'" + value + "'").orElse("unset"));
            if (!facts.ucxMayLoad()) {
                reasons.add("UCX_ERROR_SIGNALS is " + facts.ucxErrorSignals().map(value -> "'" + value + "'").orElse("unset")
                        + ": UCX's handlers for SIGSEGV and friends clash with the JVM's own and crash or hang it; start the JVM with UCX_ERROR_SIGNALS= "
                        + "(empty) in its environment, setting it from inside the JVM is too late");
            }
        }
        details.put(CLOSED_TARGET_FENCE, fake ? "registration (the fake checks the target's registrations as bytes move)"
                : closedTargetFence(System.getenv("UCX_TLS")));
        if (!facts.loadedUcx().isEmpty()) {
            details.put("ucx-library", facts.loadedUcx().stream().map(LoadedUcx::toString).collect(Collectors.joining(", ")));
        }
        if (!fake) {
            ucxProblem(facts.loadedUcx()).ifPresent(reasons::add);
        }
        Set<MemoryKind> memory = Set.of();
        if (facts.plugins().isPresent()) {
            NixlPluginReport plugins = facts.plugins().get();
            details.put("plugins", plugins.plugins().isEmpty() ? "none" : String.join(", ", plugins.plugins()));
            reasons.addAll(plugins.problems());
            if (plugins.problems().isEmpty() && !plugins.plugins().contains("UCX")) {
                reasons.add("NIXL offers no UCX plugin (found: " + (plugins.plugins().isEmpty() ? "none" : String.join(", ", plugins.plugins()))
                        + "); set NIXL_PLUGIN_DIR to the folder holding libplugin_UCX.so");
            }
            memory = plugins.ucxMemory();
            if (!memory.isEmpty()) {
                details.put("ucx-memory", memory.stream().sorted().map(MemoryKind::name).collect(Collectors.joining(", "))
                        + (fake && memory.contains(MemoryKind.DEVICE) ? " (the fake registers DEVICE only with NIXL_FAKE_VRAM_AS_HOST=1)" : ""));
            }
        }
        else if (library.loaded() && !library.stub()) {
            details.put("plugins", "not listed: NIXL may load UCX while listing them");
        }
        if (!reasons.isEmpty()) {
            return Availability.unavailable(reasons, details);
        }
        Set<Capability> capabilities = EnumSet.of(Capability.HOST_MEMORY, Capability.CROSS_PROCESS, Capability.PEER_FAILURE_DETECTION, Capability.COALESCING);
        if (!fake) {
            capabilities.add(Capability.CROSS_HOST);
            // NIXL's UCX plugin lists VRAM whatever UCX was built with; without UCX's CUDA module registering it fails
            if (memory.contains(MemoryKind.DEVICE) && facts.loadedUcx().stream().anyMatch(LoadedUcx::cudaModule)) {
                capabilities.add(Capability.DEVICE_MEMORY);
            }
            else if (memory.contains(MemoryKind.DEVICE)) {
                details.put("device-memory", "not offered: NIXL lists VRAM, but the UCX it runs on has no CUDA module (ucx/libuct_cuda.so beside "
                        + facts.loadedUcx().stream().map(ucx -> ucx.library().toString()).findFirst().orElse("libucp, which is not loaded") + ")");
            }
        }
        return Availability.available(capabilities, details);
    }

    /**
     * Tells whether a target's close fences its memory off from a peer that still posts to it.
     * Deregistering revokes what RDMA, TCP and shared-memory segments need on the target, but UCX's
     * {@code cma} writes into another process on the host by address ({@code process_vm_writev}),
     * with nothing registered to revoke: over NIXL 1.4.0 a write posted after the target closed was
     * refused, yet its bytes landed whenever the initiator had not yet seen the target's endpoints
     * close. UCX may use cma unless {@code UCX_TLS} leaves it out.
     *
     * @param ucxTls the value of {@code UCX_TLS}, or null when unset.
     * @return {@code registration ...} when a closed target's memory is fenced, else {@code none: ...} with the fix.
     */
    static String closedTargetFence(String ucxTls)
    {
        if (ucxTls != null && !ucxTls.isBlank()) {
            String value = ucxTls.strip().toLowerCase(Locale.ROOT);
            boolean excluding = value.startsWith("^");
            List<String> names = List.of((excluding ? value.substring(1) : value).split(","));
            // sm and shm name every shared-memory transport, cma among them
            boolean namesCma = names.stream().map(String::strip).anyMatch(CMA_NAMES::contains);
            if (excluding ? namesCma : !namesCma) {
                return "registration (UCX_TLS=" + ucxTls + " leaves out cma, so a closed target's deregistered memory takes no more bytes)";
            }
        }
        return "none: UCX may write with cma (process_vm_writev), which needs no registration on the target, so a write posted after the target "
                + "closed can still land in its memory while that stays mapped; keep such memory out of reuse until its peers disconnected, or set "
                + "UCX_TLS=^cma (UCX_TLS=" + (ucxTls == null ? "unset" : ucxTls) + ")";
    }

    /**
     * NIXL's UCX plugin binds {@code libucp.so.0} by soname, so it runs on whichever UCX the process
     * loaded first. Observed: with Debian's UCX 1.13 loaded before NIXL 1.4.0's, everything worked
     * 2 to 3 times slower on a version pair neither supports.
     */
    static Optional<String> ucxProblem(List<LoadedUcx> loaded)
    {
        String fix = "start the JVM with the folder of the UCX NIXL was built with first on LD_LIBRARY_PATH, keep the ucx transport from loading "
                + "the system's UCX (-Dkvbridge.ucx.enabled=false), and set NIXL_UCX_EXPECTED_SONAME to that UCX's path so NIXL refuses a wrong one";
        if (loaded.size() > 1) {
            return Optional.of("two UCX libraries are loaded in this process (" + loaded.stream().map(LoadedUcx::toString).collect(Collectors.joining(", "))
                    + "), and NIXL's UCX plugin binds whichever the dynamic linker found first; " + fix);
        }
        if (loaded.size() == 1 && loaded.get(0).olderThan(MIN_UCX_MAJOR, MIN_UCX_MINOR)) {
            return Optional.of("NIXL's UCX plugin runs on " + loaded.get(0) + ", older than the UCX " + MIN_UCX_MAJOR + "." + MIN_UCX_MINOR
                    + " NIXL 1.4 expects (it warns that CUDA support is limited; transfers ran 2 to 3 times slower); " + fix);
        }
        return Optional.empty();
    }

    private static String notFound(NixlLibraryLocator.Location location)
    {
        if (location.configured()) {
            return NixlLibraryLocator.FILE_NAME + " not found at " + (location.searched().isEmpty() ? "the configured path" : location.searched().getFirst())
                    + "; set " + NixlBackendFactory.LIBRARY_PROPERTY + " (option library) to the directory or file of an installed NIXL 0.10.1 or newer";
        }
        List<Path> searched = location.searched();
        String shown = searched.stream().limit(MAX_SEARCHED_SHOWN).map(path -> path.getParent().toString()).collect(Collectors.joining(", "));
        return NixlLibraryLocator.FILE_NAME + " not found (searched " + searched.size() + " directories: " + shown
                + (searched.size() > MAX_SEARCHED_SHOWN ? ", ..." : "") + "); install NIXL 0.10.1 or newer, or set -D" + NixlBackendFactory.LIBRARY_PROPERTY
                + "=<directory> (option library)";
    }
}
