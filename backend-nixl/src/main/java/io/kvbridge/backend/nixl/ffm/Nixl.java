package io.kvbridge.backend.nixl.ffm;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.transport.NativeLibrary;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Entry point of the binding: loads a {@code libnixl_capi.so} once per file, reports what it is,
 * and opens agents on it.
 */
public final class Nixl
{
    // a library is loaded at most once per JVM; a failure is remembered so probing stays cheap
    private static final ConcurrentHashMap<Path, Object> LIBRARIES = new ConcurrentHashMap<>();
    private static final AtomicLong PROBE_AGENTS = new AtomicLong();
    /**
     * How long NIXL's progress thread waits for a UCX event at most before it polls again, in
     * microseconds. NIXL's own default, 0, has the thread poll without pause: one busy core per
     * agent, which on a host with few cores starves the threads that post and check transfers (the
     * seed demo ran 4 to 5 times slower on 2 cores). The thread still wakes for UCX's events.
     */
    public static final long DEFAULT_PROGRESS_DELAY_MICROS = 100;

    private Nixl()
    {
    }

    /**
     * Loads a library (once) and reports what it is. Never throws.
     *
     * @param library the {@code libnixl_capi.so} file.
     * @return the report; {@link NixlLibraryReport#loaded()} tells whether it is usable.
     */
    public static NixlLibraryReport inspect(Path library)
    {
        requireNonNull(library, "library is null");
        Object loaded = load(library);
        if (loaded instanceof NixlLibrary nixl) {
            return new NixlLibraryReport(library, List.of(), nixl.stub, nixl.fakeIdentity, Optional.of(nixl.level));
        }
        return new NixlLibraryReport(library, List.of((String) loaded), false, Optional.empty(), Optional.empty());
    }

    /**
     * Asks a short-lived agent which backend plugins NIXL can load. Never throws.
     *
     * @param library a library {@link #inspect} reported loaded.
     * @param describeUcx also ask the UCX plugin which memory kinds it registers; this loads UCX
     *     into the process, so only do it when UCX may be loaded (see {@code UCX_ERROR_SIGNALS}).
     * @return the plugins, or the problems met.
     */
    public static NixlPluginReport plugins(Path library, boolean describeUcx)
    {
        if (!(load(library) instanceof NixlLibrary nixl)) {
            return new NixlPluginReport(List.of(), Set.of(), List.of("the library did not load"));
        }
        List<String> plugins = new ArrayList<>();
        Set<MemoryKind> memory = EnumSet.noneOf(MemoryKind.class);
        List<String> problems = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            MemorySegment out2 = arena.allocate(ADDRESS);
            MemorySegment size = arena.allocate(JAVA_LONG);
            MemorySegment config = arena.allocate(NixlAgent.CONFIG);
            config.set(JAVA_LONG, NixlAgent.CONFIG.byteOffset(groupElement("lthr_delay_us")), 100_000L);
            // as the transport opens its agents by default: the backend started below must meet what they need
            config.set(JAVA_BOOLEAN, NixlAgent.CONFIG.byteOffset(groupElement("enable_prog_thread")), true);
            config.set(JAVA_LONG, NixlAgent.CONFIG.byteOffset(groupElement("pthr_delay_us")), DEFAULT_PROGRESS_DELAY_MICROS);
            config.set(JAVA_INT, NixlAgent.CONFIG.byteOffset(groupElement("num_workers")), 1);
            String name = "kvbridge-probe-" + ProcessHandle.current().pid() + "-" + PROBE_AGENTS.incrementAndGet();
            int status = (int) nixl.createConfiguredAgent.invokeExact(arena.allocateFrom(name), config, out);
            if (status != NixlStatus.SUCCESS) {
                problems.add("NIXL could not create an agent (nixl_capi_create_configured_agent returned " + status + " "
                        + NixlStatus.name(status) + "); check NIXL_ETCD_ENDPOINTS / NIXL_TCPSTORE_ENDPOINT and the NIXL installation");
                return new NixlPluginReport(plugins, memory, problems);
            }
            long agent = out.get(JAVA_LONG, 0);
            try {
                status = (int) nixl.getAvailablePlugins.invokeExact(agent, out);
                if (status != NixlStatus.SUCCESS) {
                    problems.add("nixl_capi_get_available_plugins returned " + status + " " + NixlStatus.name(status) + "; check NIXL_PLUGIN_DIR");
                }
                else {
                    long list = out.get(JAVA_LONG, 0);
                    if ((int) nixl.stringListSize.invokeExact(list, size) == NixlStatus.SUCCESS) {
                        for (long i = 0; i < size.get(JAVA_LONG, 0); i++) {
                            if ((int) nixl.stringListGet.invokeExact(list, i, out2) == NixlStatus.SUCCESS) {
                                plugins.add(NixlMemory.string(out2.get(ADDRESS, 0)));
                            }
                        }
                    }
                    int destroyed = (int) nixl.destroyStringList.invokeExact(list);
                }
                if (describeUcx && plugins.contains("UCX")) {
                    describeUcx(nixl, arena, agent, memory, problems);
                }
            }
            finally {
                int destroyed = (int) nixl.destroyAgent.invokeExact(agent);
            }
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
        return new NixlPluginReport(plugins, memory, problems);
    }

    private static void describeUcx(NixlLibrary nixl, Arena arena, long agent, Set<MemoryKind> memory, List<String> problems) throws Throwable
    {
        MemorySegment mems = arena.allocate(ADDRESS);
        MemorySegment params = arena.allocate(ADDRESS);
        MemorySegment size = arena.allocate(JAVA_LONG);
        MemorySegment type = arena.allocate(JAVA_INT);
        int status = (int) nixl.getPluginParams.invokeExact(agent, arena.allocateFrom("UCX"), mems, params);
        if (status != NixlStatus.SUCCESS) {
            problems.add("the UCX plugin is listed but does not load (nixl_capi_get_plugin_params returned " + status
                    + "); check that UCX and its libraries are on LD_LIBRARY_PATH");
            return;
        }
        long list = mems.get(JAVA_LONG, 0);
        if ((int) nixl.memListSize.invokeExact(list, size) == NixlStatus.SUCCESS) {
            for (long i = 0; i < size.get(JAVA_LONG, 0); i++) {
                if ((int) nixl.memListGet.invokeExact(list, i, type) == NixlStatus.SUCCESS) {
                    int value = type.get(JAVA_INT, 0);
                    if (value == NixlAgent.MEM_DRAM) {
                        memory.add(MemoryKind.HOST);
                    }
                    else if (value == NixlAgent.MEM_VRAM) {
                        memory.add(MemoryKind.DEVICE);
                    }
                }
            }
        }
        // a plugin that loads may still refuse to start: NIXL 1.4.0's UCX plugin refuses a UCX built
        // without multi-threading for an agent with a progress thread, which only creating a backend shows
        MemorySegment backend = arena.allocate(ADDRESS);
        status = (int) nixl.createBackend.invokeExact(agent, arena.allocateFrom("UCX"), params.get(JAVA_LONG, 0), backend);
        if (status != NixlStatus.SUCCESS) {
            problems.add("NIXL's UCX plugin loads but cannot start a backend (nixl_capi_create_backend returned " + status + " "
                    + NixlStatus.name(status) + ") for an agent with NIXL's progress thread, as the transport opens them; " + backendStartCauses());
        }
        else {
            int backendDestroyed = (int) nixl.destroyBackend.invokeExact(backend.get(JAVA_LONG, 0));
        }
        // best effort: a probe that cannot free a list has still answered
        int listDestroyed = (int) nixl.destroyMemList.invokeExact(list);
        int paramsDestroyed = (int) nixl.destroyParams.invokeExact(params.get(JAVA_LONG, 0));
    }

    /**
     * Names the causes seen of NIXL's UCX plugin refusing to start a backend, which NIXL's C API
     * reports only as {@code ERROR_BACKEND}; NIXL's own log on stderr says which it was.
     *
     * @return the causes, each with what NIXL logs for it and the fix.
     */
    static String backendStartCauses()
    {
        String tls = System.getenv("UCX_TLS");
        return "NIXL's own log names why: a UCX built without multi-threading (UCX's --enable-mt) reads \"UCX library does not support "
                + "multi-threading\"; a UCX_TLS that leaves out every transport able to report a failed peer, which NIXL's UCX backend asks for, "
                + "reads \"no active messages transport ... no peer failure handler\" (measured with UCX 1.22.0: shared memory, cma and self "
                + "alone are refused; keep tcp in UCX_TLS" + (tls == null ? "" : ", here UCX_TLS=" + tls) + ")";
    }

    /**
     * Opens an agent with a UCX backend, confined to the calling thread.
     *
     * @param library a library {@link #inspect} reported loaded.
     * @param name the agent name, unique among peers.
     * @param progressThread whether NIXL runs its own progress thread.
     * @return the agent, closed by the caller on the same thread.
     * @throws KvBridgeException {@code BACKEND_UNAVAILABLE} when the library or its UCX backend is unusable.
     */
    public static NixlAgent openAgent(Path library, String name, boolean progressThread)
    {
        return openAgent(library, name, progressThread, false);
    }

    /**
     * Opens an agent, optionally recording NIXL's per-request telemetry.
     *
     * @param library the {@code libnixl_capi.so} to load.
     * @param name agent name, unique among peers.
     * @param progressThread whether NIXL runs its own progress thread.
     * @param telemetry whether NIXL records per-request telemetry ({@link NixlAgent#mergedDescriptors}).
     * @return the agent, closed by the caller on the same thread.
     * @throws KvBridgeException {@code BACKEND_UNAVAILABLE} when the library or its UCX backend is unusable.
     */
    public static NixlAgent openAgent(Path library, String name, boolean progressThread, boolean telemetry)
    {
        return openAgent(library, name, progressThread, telemetry, DEFAULT_PROGRESS_DELAY_MICROS);
    }

    /**
     * Opens an agent whose progress thread waits at most the given time for an event between polls.
     *
     * @param library the {@code libnixl_capi.so} to load.
     * @param name agent name, unique among peers.
     * @param progressThread whether NIXL runs its own progress thread.
     * @param telemetry whether NIXL records per-request telemetry ({@link NixlAgent#mergedDescriptors}).
     * @param progressDelayMicros NIXL's {@code pthr_delay_us}: 0 makes its progress thread poll without pause.
     * @return the agent, closed by the caller on the same thread.
     * @throws KvBridgeException {@code BACKEND_UNAVAILABLE} when the library or its UCX backend is unusable.
     */
    public static NixlAgent openAgent(Path library, String name, boolean progressThread, boolean telemetry, long progressDelayMicros)
    {
        return openAgent(library, name, progressThread, telemetry, progressDelayMicros, "", null);
    }

    /**
     * Opens an agent that any thread may call while it holds the given lock.
     *
     * @param library the {@code libnixl_capi.so} to load.
     * @param name agent name, unique among peers.
     * @param progressThread whether NIXL runs its own progress thread.
     * @param telemetry whether NIXL records per-request telemetry ({@link NixlAgent#mergedDescriptors}).
     * @param progressDelayMicros NIXL's {@code pthr_delay_us}: 0 makes its progress thread poll without pause.
     * @param ucxConfig UCX settings for NIXL's UCX backend ({@code NAME=VALUE,...}, names without
     *     {@code UCX_}; NIXL's {@code engine_config}); empty for none. The environment's wins.
     * @param lock held by every caller of the agent, the opener included; null to confine it to the calling thread.
     * @return the agent.
     * @throws KvBridgeException {@code BACKEND_UNAVAILABLE} when the library or its UCX backend is unusable.
     */
    public static NixlAgent openAgent(Path library, String name, boolean progressThread, boolean telemetry, long progressDelayMicros, String ucxConfig,
            ReentrantLock lock)
    {
        Object loaded = load(library);
        if (!(loaded instanceof NixlLibrary nixl)) {
            throw new KvBridgeException(ErrorCode.BACKEND_UNAVAILABLE, (String) loaded);
        }
        return new NixlAgent(nixl, name, progressThread, telemetry, progressDelayMicros, ucxConfig, lock);
    }

    /** Returns the loaded library, or why it could not be loaded. */
    private static Object load(Path library)
    {
        Path key;
        try {
            key = library.toRealPath();
        }
        catch (IOException e) {
            return "libnixl_capi.so not found at " + library + " (" + e.getMessage() + ")";
        }
        return LIBRARIES.computeIfAbsent(key, Nixl::bind);
    }

    private static Object bind(Path library)
    {
        try {
            return new NixlLibrary(library);
        }
        catch (NixlLibrary.MissingSymbols e) {
            return library + " lacks required C API functions " + e.symbols + "; it is older than NIXL 0.10.1 or not NIXL's C API: install NIXL 0.10.1 or newer";
        }
        catch (IllegalCallerException e) {
            return "native access is denied, so " + library + " cannot be loaded: start the JVM with --enable-native-access="
                    + NativeLibrary.nativeAccessFlag(Nixl.class);
        }
        catch (IllegalArgumentException e) {
            return "the dynamic linker could not load " + library + " (" + e.getMessage() + "): its dependencies (libnixl.so, libnixl_build.so, "
                    + "UCX, abseil) must be on LD_LIBRARY_PATH; `ldd " + library + "` lists what is missing";
        }
        catch (LinkageError e) {
            return "binding " + library + " failed: " + e.getMessage();
        }
    }
}
