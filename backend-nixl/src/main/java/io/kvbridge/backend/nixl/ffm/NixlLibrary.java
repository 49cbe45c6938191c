package io.kvbridge.backend.nixl.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.util.Objects.requireNonNull;

import io.kvbridge.transport.NativeLibrary;
import io.kvbridge.transport.libc.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * One loaded {@code libnixl_capi.so}: one method handle per C function the transport calls, bound
 * once through {@link NativeLibrary.Binder}, which collects every missing symbol. NIXL is bound
 * per file rather than in a static holder because a process may hold two of them (the tests load
 * the fakes of both C API generations). The functions every NIXL from 0.10.1 (the first release
 * that installs the library) exports are required; the six added after 1.4.0 are looked up only
 * to tell the status dialect apart and are never called.
 *
 * <p>Opaque handles (agents, lists, requests, options) and the memory a hot call passes (index
 * arrays, notification bytes, out-slots) travel as {@code JAVA_LONG}: on LP64 a pointer is passed
 * like a 64-bit integer and no segment object is made per call. Cold calls that take strings or
 * buffers bind them as {@code ADDRESS}. Every {@code nixl_capi_*} function returns a status.
 *
 * <p>Threads: immutable once bound; an agent's handles are passed to these functions only on the
 * agent's own thread ({@link NixlAgent}).
 */
final class NixlLibrary
{
    /** Added after 1.4.0 (memory views, remote lists); their presence marks the newer status dialect. */
    static final List<String> HEAD_ONLY = List.of(
            "nixl_capi_prep_mem_view_local", "nixl_capi_prep_mem_view_remote", "nixl_capi_release_mem_view",
            "nixl_capi_create_remote_dlist", "nixl_capi_destroy_remote_dlist", "nixl_capi_remote_dlist_add_desc");

    private static final ValueLayout STATUS = JAVA_INT;
    private static final ValueLayout POINTER = JAVA_LONG;

    final Path path;
    final NixlApiLevel level;
    final boolean stub;
    final Optional<String> fakeIdentity;

    final MethodHandle createConfiguredAgent;
    final MethodHandle destroyAgent;
    final MethodHandle getAvailablePlugins;
    final MethodHandle stringListSize;
    final MethodHandle stringListGet;
    final MethodHandle destroyStringList;
    final MethodHandle getPluginParams;
    final MethodHandle memListSize;
    final MethodHandle memListGet;
    final MethodHandle destroyMemList;
    final MethodHandle createParams;
    final MethodHandle paramsAdd;
    final MethodHandle destroyParams;
    final MethodHandle createBackend;
    final MethodHandle destroyBackend;
    final MethodHandle createOptArgs;
    final MethodHandle destroyOptArgs;
    final MethodHandle optArgsAddBackend;
    final MethodHandle optArgsSetNotifMsg;
    final MethodHandle optArgsSetHasNotif;
    final MethodHandle createRegDlist;
    final MethodHandle regDlistAddDesc;
    final MethodHandle destroyRegDlist;
    final MethodHandle registerMem;
    final MethodHandle deregisterMem;
    final MethodHandle getLocalMd;
    final MethodHandle loadRemoteMd;
    final MethodHandle checkRemoteMd;
    final MethodHandle invalidateRemoteMd;
    final MethodHandle createXferDlist;
    final MethodHandle xferDlistAddDesc;
    final MethodHandle destroyXferDlist;
    final MethodHandle prepXferDlist;
    final MethodHandle releaseXferDlistHandle;
    final MethodHandle makeXferReq;
    final MethodHandle postXferReq;
    final MethodHandle getXferStatus;
    final MethodHandle getXferTelemetry;
    final MethodHandle releaseXferReq;
    final MethodHandle destroyXferReq;
    final MethodHandle createNotifMap;
    final MethodHandle destroyNotifMap;
    final MethodHandle getNotifs;
    final MethodHandle notifMapSize;
    final MethodHandle notifMapGetAgentAt;
    final MethodHandle notifMapGetNotifsSize;
    final MethodHandle notifMapGetNotif;
    final MethodHandle notifMapClear;
    final MethodHandle genNotif;

    /** Thrown when a library loads but lacks required functions; names them all. */
    static final class MissingSymbols extends Exception
    {
        private static final long serialVersionUID = 1L;

        final List<String> symbols;

        MissingSymbols(List<String> symbols)
        {
            super(String.join(", ", symbols));
            this.symbols = List.copyOf(symbols);
        }
    }

    /**
     * Loads a library for the life of the JVM and binds its functions.
     *
     * @param path the library file.
     * @throws IllegalArgumentException when the dynamic linker cannot load it.
     * @throws MissingSymbols when required functions are missing.
     */
    NixlLibrary(Path path) throws MissingSymbols
    {
        this.path = requireNonNull(path, "path is null");
        // global arena: NIXL is never unloaded, since its threads may outlive any scope we could pick
        SymbolLookup lookup = SymbolLookup.libraryLookup(path, Arena.global());
        NativeLibrary.Binder binder = new NativeLibrary.Binder(path.toString(), lookup, "NIXL 0.10.1 or newer");
        createConfiguredAgent = binder.bind("nixl_capi_create_configured_agent", status(ADDRESS, ADDRESS, ADDRESS));
        destroyAgent = binder.bind("nixl_capi_destroy_agent", status(POINTER));
        getAvailablePlugins = binder.bind("nixl_capi_get_available_plugins", status(POINTER, ADDRESS));
        stringListSize = binder.bind("nixl_capi_string_list_size", status(POINTER, ADDRESS));
        stringListGet = binder.bind("nixl_capi_string_list_get", status(POINTER, JAVA_LONG, ADDRESS));
        destroyStringList = binder.bind("nixl_capi_destroy_string_list", status(POINTER));
        getPluginParams = binder.bind("nixl_capi_get_plugin_params", status(POINTER, ADDRESS, ADDRESS, ADDRESS));
        memListSize = binder.bind("nixl_capi_mem_list_size", status(POINTER, ADDRESS));
        memListGet = binder.bind("nixl_capi_mem_list_get", status(POINTER, JAVA_LONG, ADDRESS));
        destroyMemList = binder.bind("nixl_capi_destroy_mem_list", status(POINTER));
        createParams = binder.bind("nixl_capi_create_params", status(ADDRESS));
        paramsAdd = binder.bind("nixl_capi_params_add", status(POINTER, ADDRESS, ADDRESS));
        destroyParams = binder.bind("nixl_capi_destroy_params", status(POINTER));
        createBackend = binder.bind("nixl_capi_create_backend", status(POINTER, ADDRESS, POINTER, ADDRESS));
        destroyBackend = binder.bind("nixl_capi_destroy_backend", status(POINTER));
        createOptArgs = binder.bind("nixl_capi_create_opt_args", status(ADDRESS));
        destroyOptArgs = binder.bind("nixl_capi_destroy_opt_args", status(POINTER));
        optArgsAddBackend = binder.bind("nixl_capi_opt_args_add_backend", status(POINTER, POINTER));
        // (args, data, length): on the post path when a transfer carries a notification
        optArgsSetNotifMsg = binder.bind("nixl_capi_opt_args_set_notif_msg", status(POINTER, POINTER, JAVA_LONG));
        optArgsSetHasNotif = binder.bind("nixl_capi_opt_args_set_has_notif", status(POINTER, JAVA_BOOLEAN));
        createRegDlist = binder.bind("nixl_capi_create_reg_dlist", status(JAVA_INT, ADDRESS));
        regDlistAddDesc = binder.bind("nixl_capi_reg_dlist_add_desc", status(POINTER, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG));
        destroyRegDlist = binder.bind("nixl_capi_destroy_reg_dlist", status(POINTER));
        registerMem = binder.bind("nixl_capi_register_mem", status(POINTER, POINTER, POINTER));
        deregisterMem = binder.bind("nixl_capi_deregister_mem", status(POINTER, POINTER, POINTER));
        getLocalMd = binder.bind("nixl_capi_get_local_md", status(POINTER, ADDRESS, ADDRESS));
        loadRemoteMd = binder.bind("nixl_capi_load_remote_md", status(POINTER, ADDRESS, JAVA_LONG, ADDRESS));
        checkRemoteMd = binder.bind("nixl_capi_check_remote_md", status(POINTER, ADDRESS, POINTER));
        invalidateRemoteMd = binder.bind("nixl_capi_invalidate_remote_md", status(POINTER, ADDRESS));
        createXferDlist = binder.bind("nixl_capi_create_xfer_dlist", status(JAVA_INT, ADDRESS));
        xferDlistAddDesc = binder.bind("nixl_capi_xfer_dlist_add_desc", status(POINTER, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        destroyXferDlist = binder.bind("nixl_capi_destroy_xfer_dlist", status(POINTER));
        prepXferDlist = binder.bind("nixl_capi_prep_xfer_dlist", status(POINTER, ADDRESS, POINTER, ADDRESS, POINTER));
        releaseXferDlistHandle = binder.bind("nixl_capi_release_xfer_dlist_handle", status(POINTER, POINTER));
        // (agent, op, local, local indices, count, remote, remote indices, count, request out, options): the post path
        makeXferReq = binder.bind("nixl_capi_make_xfer_req",
                status(POINTER, JAVA_INT, POINTER, POINTER, JAVA_LONG, POINTER, POINTER, JAVA_LONG, POINTER, POINTER));
        postXferReq = binder.bind("nixl_capi_post_xfer_req", status(POINTER, POINTER, POINTER));
        getXferStatus = binder.bind("nixl_capi_get_xfer_status", status(POINTER, POINTER));
        // (agent, request, caller's 40-byte telemetry struct)
        getXferTelemetry = binder.bind("nixl_capi_get_xfer_telemetry", status(POINTER, POINTER, POINTER));
        releaseXferReq = binder.bind("nixl_capi_release_xfer_req", status(POINTER, POINTER));
        destroyXferReq = binder.bind("nixl_capi_destroy_xfer_req", status(POINTER));
        createNotifMap = binder.bind("nixl_capi_create_notif_map", status(ADDRESS));
        destroyNotifMap = binder.bind("nixl_capi_destroy_notif_map", status(POINTER));
        getNotifs = binder.bind("nixl_capi_get_notifs", status(POINTER, POINTER, POINTER));
        notifMapSize = binder.bind("nixl_capi_notif_map_size", status(POINTER, ADDRESS));
        notifMapGetAgentAt = binder.bind("nixl_capi_notif_map_get_agent_at", status(POINTER, JAVA_LONG, ADDRESS));
        notifMapGetNotifsSize = binder.bind("nixl_capi_notif_map_get_notifs_size", status(POINTER, ADDRESS, ADDRESS));
        notifMapGetNotif = binder.bind("nixl_capi_notif_map_get_notif", status(POINTER, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
        notifMapClear = binder.bind("nixl_capi_notif_map_clear", status(POINTER));
        genNotif = binder.bind("nixl_capi_gen_notif", status(POINTER, ADDRESS, ADDRESS, JAVA_LONG, POINTER));
        MethodHandle isStub = binder.bind("nixl_capi_is_stub", FunctionDescriptor.of(JAVA_BOOLEAN));
        if (!binder.missing().isEmpty()) {
            throw new MissingSymbols(binder.missing());
        }
        this.level = HEAD_ONLY.stream().allMatch(name -> lookup.find(name).isPresent()) ? NixlApiLevel.HEAD : NixlApiLevel.V1_4;
        // a fake built for tests identifies itself through an extra symbol real NIXL lacks
        Optional<MethodHandle> fakeInfo = binder.bindOptional("nixl_fake_info", FunctionDescriptor.of(ADDRESS));
        try {
            this.stub = (boolean) isStub.invokeExact();
            this.fakeIdentity = fakeInfo.isEmpty() ? Optional.empty() : Optional.of(NixlMemory.string((MemorySegment) fakeInfo.get().invokeExact()));
        }
        catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static FunctionDescriptor status(MemoryLayout... arguments)
    {
        return FunctionDescriptor.of(STATUS, arguments);
    }

    /** Frees what NIXL {@code malloc}ed and handed over. */
    static void free(MemorySegment pointer)
    {
        Libc.free(pointer.address());
    }

    /**
     * Passes on what a downcall threw: runtime exceptions (the binding's own typed errors among
     * them) and errors as they are; anything else, which a downcall cannot throw, as a bug.
     *
     * @param t what was thrown in a block of {@code invokeExact} calls.
     * @return the exception to throw.
     */
    static RuntimeException rethrow(Throwable t)
    {
        if (t instanceof RuntimeException e) {
            return e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new AssertionError("a NIXL downcall threw " + t, t);
    }
}
