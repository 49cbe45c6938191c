package io.kvbridge.backend.nixl.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.util.Objects.requireNonNull;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One loaded {@code libnixl_capi.so}: a method handle per C function the transport calls, each
 * resolved once when the library is loaded. The functions every NIXL from 0.10.1 (the first
 * release that installs the library) exports are required; the six added after 1.4.0 are looked up
 * only to tell the status dialect apart and are never called.
 */
final class NixlLibrary
{
    /** Added after 1.4.0 (memory views, remote lists); their presence marks the newer status dialect. */
    static final List<String> HEAD_ONLY = List.of(
            "nixl_capi_prep_mem_view_local", "nixl_capi_prep_mem_view_remote", "nixl_capi_release_mem_view",
            "nixl_capi_create_remote_dlist", "nixl_capi_destroy_remote_dlist", "nixl_capi_remote_dlist_add_desc");

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle FREE = LINKER.downcallHandle(
            LINKER.defaultLookup().find("free").orElseThrow(() -> new LinkageError("libc has no symbol 'free'")),
            FunctionDescriptor.ofVoid(ADDRESS));

    final Path path;
    final NixlApiLevel level;
    final boolean stub;
    final Optional<String> fakeIdentity;

    private final MethodHandle createConfiguredAgent;
    private final MethodHandle destroyAgent;
    private final MethodHandle getAvailablePlugins;
    private final MethodHandle stringListSize;
    private final MethodHandle stringListGet;
    private final MethodHandle destroyStringList;
    private final MethodHandle getPluginParams;
    private final MethodHandle memListSize;
    private final MethodHandle memListGet;
    private final MethodHandle destroyMemList;
    private final MethodHandle createParams;
    private final MethodHandle paramsAdd;
    private final MethodHandle destroyParams;
    private final MethodHandle createBackend;
    private final MethodHandle destroyBackend;
    private final MethodHandle createOptArgs;
    private final MethodHandle destroyOptArgs;
    private final MethodHandle optArgsAddBackend;
    private final MethodHandle optArgsSetNotifMsg;
    private final MethodHandle optArgsSetHasNotif;
    private final MethodHandle createRegDlist;
    private final MethodHandle regDlistAddDesc;
    private final MethodHandle destroyRegDlist;
    private final MethodHandle registerMem;
    private final MethodHandle deregisterMem;
    private final MethodHandle getLocalMd;
    private final MethodHandle loadRemoteMd;
    private final MethodHandle checkRemoteMd;
    private final MethodHandle invalidateRemoteMd;
    private final MethodHandle createXferDlist;
    private final MethodHandle xferDlistAddDesc;
    private final MethodHandle destroyXferDlist;
    private final MethodHandle prepXferDlist;
    private final MethodHandle releaseXferDlistHandle;
    private final MethodHandle makeXferReq;
    private final MethodHandle postXferReq;
    private final MethodHandle getXferStatus;
    private final MethodHandle releaseXferReq;
    private final MethodHandle destroyXferReq;
    private final MethodHandle createNotifMap;
    private final MethodHandle destroyNotifMap;
    private final MethodHandle getNotifs;
    private final MethodHandle notifMapSize;
    private final MethodHandle notifMapGetAgentAt;
    private final MethodHandle notifMapGetNotifsSize;
    private final MethodHandle notifMapGetNotif;
    private final MethodHandle notifMapClear;
    private final MethodHandle genNotif;
    private final MethodHandle isStub;

    /** Thrown when a library loads but lacks required functions. */
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

    private final SymbolLookup lookup;
    private final List<String> missing = new ArrayList<>();

    /**
     * Loads a library and binds its functions. Opaque handles (agents, lists, requests, options)
     * are bound as {@code long}: on LP64 a pointer travels in the same register as a 64-bit
     * integer, and no segment object is made per call. Memory the binding reads or writes (strings,
     * buffers, index arrays, out-slots) is bound as {@code MemorySegment}.
     *
     * @param path the library file.
     * @throws IllegalArgumentException when the dynamic linker cannot load it.
     * @throws MissingSymbols when required functions are missing.
     */
    NixlLibrary(Path path) throws MissingSymbols
    {
        this.path = requireNonNull(path, "path is null");
        // global arena: NIXL is never unloaded, since its threads may outlive any scope we could pick
        this.lookup = SymbolLookup.libraryLookup(path, Arena.global());
        createConfiguredAgent = bind("nixl_capi_create_configured_agent", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        destroyAgent = bind("nixl_capi_destroy_agent", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        getAvailablePlugins = bind("nixl_capi_get_available_plugins", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
        stringListSize = bind("nixl_capi_string_list_size", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
        stringListGet = bind("nixl_capi_string_list_get", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS));
        destroyStringList = bind("nixl_capi_destroy_string_list", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        getPluginParams = bind("nixl_capi_get_plugin_params", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS));
        memListSize = bind("nixl_capi_mem_list_size", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
        memListGet = bind("nixl_capi_mem_list_get", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS));
        destroyMemList = bind("nixl_capi_destroy_mem_list", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        createParams = bind("nixl_capi_create_params", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        paramsAdd = bind("nixl_capi_params_add", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS));
        destroyParams = bind("nixl_capi_destroy_params", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        createBackend = bind("nixl_capi_create_backend", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS));
        destroyBackend = bind("nixl_capi_destroy_backend", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        createOptArgs = bind("nixl_capi_create_opt_args", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        destroyOptArgs = bind("nixl_capi_destroy_opt_args", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        optArgsAddBackend = bind("nixl_capi_opt_args_add_backend", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        optArgsSetNotifMsg = bind("nixl_capi_opt_args_set_notif_msg", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG));
        optArgsSetHasNotif = bind("nixl_capi_opt_args_set_has_notif", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_BOOLEAN));
        createRegDlist = bind("nixl_capi_create_reg_dlist", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        regDlistAddDesc = bind("nixl_capi_reg_dlist_add_desc", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG));
        destroyRegDlist = bind("nixl_capi_destroy_reg_dlist", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        registerMem = bind("nixl_capi_register_mem", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        deregisterMem = bind("nixl_capi_deregister_mem", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        getLocalMd = bind("nixl_capi_get_local_md", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS));
        loadRemoteMd = bind("nixl_capi_load_remote_md", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS));
        checkRemoteMd = bind("nixl_capi_check_remote_md", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG));
        invalidateRemoteMd = bind("nixl_capi_invalidate_remote_md", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
        createXferDlist = bind("nixl_capi_create_xfer_dlist", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        xferDlistAddDesc = bind("nixl_capi_xfer_dlist_add_desc", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        destroyXferDlist = bind("nixl_capi_destroy_xfer_dlist", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        prepXferDlist = bind("nixl_capi_prep_xfer_dlist", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG));
        releaseXferDlistHandle = bind("nixl_capi_release_xfer_dlist_handle", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        makeXferReq = bind("nixl_capi_make_xfer_req", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG));
        postXferReq = bind("nixl_capi_post_xfer_req", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        getXferStatus = bind("nixl_capi_get_xfer_status", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        releaseXferReq = bind("nixl_capi_release_xfer_req", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        destroyXferReq = bind("nixl_capi_destroy_xfer_req", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        createNotifMap = bind("nixl_capi_create_notif_map", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        destroyNotifMap = bind("nixl_capi_destroy_notif_map", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        getNotifs = bind("nixl_capi_get_notifs", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        notifMapSize = bind("nixl_capi_notif_map_size", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
        notifMapGetAgentAt = bind("nixl_capi_notif_map_get_agent_at", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS));
        notifMapGetNotifsSize = bind("nixl_capi_notif_map_get_notifs_size", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS));
        notifMapGetNotif = bind("nixl_capi_notif_map_get_notif", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
        notifMapClear = bind("nixl_capi_notif_map_clear", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        genNotif = bind("nixl_capi_gen_notif", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG));
        isStub = bind("nixl_capi_is_stub", FunctionDescriptor.of(JAVA_BOOLEAN));
        if (!missing.isEmpty()) {
            throw new MissingSymbols(missing);
        }
        boolean head = HEAD_ONLY.stream().allMatch(name -> lookup.find(name).isPresent());
        this.level = head ? NixlApiLevel.HEAD : NixlApiLevel.V1_4;
        this.stub = isStub();
        this.fakeIdentity = readFakeIdentity();
    }

    private MethodHandle bind(String name, FunctionDescriptor descriptor)
    {
        Optional<MemorySegment> symbol = lookup.find(name);
        if (symbol.isEmpty()) {
            missing.add(name);
            return null;
        }
        return LINKER.downcallHandle(symbol.get(), descriptor);
    }

    /** A fake built for tests identifies itself through an extra symbol real NIXL lacks. */
    private Optional<String> readFakeIdentity()
    {
        Optional<MemorySegment> info = lookup.find("nixl_fake_info");
        if (info.isEmpty()) {
            return Optional.empty();
        }
        try {
            MemorySegment text = (MemorySegment) LINKER.downcallHandle(info.get(), FunctionDescriptor.of(ADDRESS)).invokeExact();
            return Optional.of(NixlMemory.string(text));
        }
        catch (Throwable t) {
            throw bug("nixl_fake_info", t);
        }
    }

    private static AssertionError bug(String function, Throwable t)
    {
        return new AssertionError("calling " + function + " through FFM failed: " + t, t);
    }

    static void free(MemorySegment pointer)
    {
        try {
            FREE.invokeExact(pointer);
        }
        catch (Throwable t) {
            throw bug("free", t);
        }
    }

    int createConfiguredAgent(MemorySegment name, MemorySegment config, MemorySegment agentOut)
    {
        try {
            return (int) createConfiguredAgent.invokeExact(name, config, agentOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_create_configured_agent", t);
        }
    }

    int destroyAgent(long agent)
    {
        try {
            return (int) destroyAgent.invokeExact(agent);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_agent", t);
        }
    }

    int getAvailablePlugins(long agent, MemorySegment listOut)
    {
        try {
            return (int) getAvailablePlugins.invokeExact(agent, listOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_get_available_plugins", t);
        }
    }

    int stringListSize(long list, MemorySegment sizeOut)
    {
        try {
            return (int) stringListSize.invokeExact(list, sizeOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_string_list_size", t);
        }
    }

    int stringListGet(long list, long index, MemorySegment stringOut)
    {
        try {
            return (int) stringListGet.invokeExact(list, index, stringOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_string_list_get", t);
        }
    }

    int destroyStringList(long list)
    {
        try {
            return (int) destroyStringList.invokeExact(list);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_string_list", t);
        }
    }

    int getPluginParams(long agent, MemorySegment plugin, MemorySegment memsOut, MemorySegment paramsOut)
    {
        try {
            return (int) getPluginParams.invokeExact(agent, plugin, memsOut, paramsOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_get_plugin_params", t);
        }
    }

    int memListSize(long list, MemorySegment sizeOut)
    {
        try {
            return (int) memListSize.invokeExact(list, sizeOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_mem_list_size", t);
        }
    }

    int memListGet(long list, long index, MemorySegment typeOut)
    {
        try {
            return (int) memListGet.invokeExact(list, index, typeOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_mem_list_get", t);
        }
    }

    int destroyMemList(long list)
    {
        try {
            return (int) destroyMemList.invokeExact(list);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_mem_list", t);
        }
    }

    int createParams(MemorySegment paramsOut)
    {
        try {
            return (int) createParams.invokeExact(paramsOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_create_params", t);
        }
    }

    int paramsAdd(long params, MemorySegment key, MemorySegment value)
    {
        try {
            return (int) paramsAdd.invokeExact(params, key, value);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_params_add", t);
        }
    }

    int destroyParams(long params)
    {
        try {
            return (int) destroyParams.invokeExact(params);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_params", t);
        }
    }

    int createBackend(long agent, MemorySegment plugin, long params, MemorySegment backendOut)
    {
        try {
            return (int) createBackend.invokeExact(agent, plugin, params, backendOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_create_backend", t);
        }
    }

    int destroyBackend(long backend)
    {
        try {
            return (int) destroyBackend.invokeExact(backend);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_backend", t);
        }
    }

    int createOptArgs(MemorySegment argsOut)
    {
        try {
            return (int) createOptArgs.invokeExact(argsOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_create_opt_args", t);
        }
    }

    int destroyOptArgs(long args)
    {
        try {
            return (int) destroyOptArgs.invokeExact(args);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_opt_args", t);
        }
    }

    int optArgsAddBackend(long args, long backend)
    {
        try {
            return (int) optArgsAddBackend.invokeExact(args, backend);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_opt_args_add_backend", t);
        }
    }

    int optArgsSetNotifMsg(long args, MemorySegment data, long length)
    {
        try {
            return (int) optArgsSetNotifMsg.invokeExact(args, data, length);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_opt_args_set_notif_msg", t);
        }
    }

    int optArgsSetHasNotif(long args, boolean hasNotif)
    {
        try {
            return (int) optArgsSetHasNotif.invokeExact(args, hasNotif);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_opt_args_set_has_notif", t);
        }
    }

    int createRegDlist(int memType, MemorySegment listOut)
    {
        try {
            return (int) createRegDlist.invokeExact(memType, listOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_create_reg_dlist", t);
        }
    }

    int regDlistAddDesc(long list, long address, long length, long device, MemorySegment metadata, long metadataLength)
    {
        try {
            return (int) regDlistAddDesc.invokeExact(list, address, length, device, metadata, metadataLength);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_reg_dlist_add_desc", t);
        }
    }

    int destroyRegDlist(long list)
    {
        try {
            return (int) destroyRegDlist.invokeExact(list);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_reg_dlist", t);
        }
    }

    int registerMem(long agent, long list, long options)
    {
        try {
            return (int) registerMem.invokeExact(agent, list, options);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_register_mem", t);
        }
    }

    int deregisterMem(long agent, long list, long options)
    {
        try {
            return (int) deregisterMem.invokeExact(agent, list, options);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_deregister_mem", t);
        }
    }

    int getLocalMd(long agent, MemorySegment dataOut, MemorySegment lengthOut)
    {
        try {
            return (int) getLocalMd.invokeExact(agent, dataOut, lengthOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_get_local_md", t);
        }
    }

    int loadRemoteMd(long agent, MemorySegment data, long length, MemorySegment nameOut)
    {
        try {
            return (int) loadRemoteMd.invokeExact(agent, data, length, nameOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_load_remote_md", t);
        }
    }

    int checkRemoteMd(long agent, MemorySegment name, long descriptors)
    {
        try {
            return (int) checkRemoteMd.invokeExact(agent, name, descriptors);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_check_remote_md", t);
        }
    }

    int invalidateRemoteMd(long agent, MemorySegment name)
    {
        try {
            return (int) invalidateRemoteMd.invokeExact(agent, name);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_invalidate_remote_md", t);
        }
    }

    int createXferDlist(int memType, MemorySegment listOut)
    {
        try {
            return (int) createXferDlist.invokeExact(memType, listOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_create_xfer_dlist", t);
        }
    }

    int xferDlistAddDesc(long list, long address, long length, long device)
    {
        try {
            return (int) xferDlistAddDesc.invokeExact(list, address, length, device);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_xfer_dlist_add_desc", t);
        }
    }

    int destroyXferDlist(long list)
    {
        try {
            return (int) destroyXferDlist.invokeExact(list);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_xfer_dlist", t);
        }
    }

    int prepXferDlist(long agent, MemorySegment agentName, long list, MemorySegment handleOut, long options)
    {
        try {
            return (int) prepXferDlist.invokeExact(agent, agentName, list, handleOut, options);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_prep_xfer_dlist", t);
        }
    }

    int releaseXferDlistHandle(long agent, long handle)
    {
        try {
            return (int) releaseXferDlistHandle.invokeExact(agent, handle);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_release_xfer_dlist_handle", t);
        }
    }

    int makeXferReq(long agent, int op, long local, MemorySegment localIndices, long localCount, long remote, MemorySegment remoteIndices, long remoteCount, MemorySegment requestOut, long options)
    {
        try {
            return (int) makeXferReq.invokeExact(agent, op, local, localIndices, localCount, remote, remoteIndices, remoteCount, requestOut, options);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_make_xfer_req", t);
        }
    }

    int postXferReq(long agent, long request, long options)
    {
        try {
            return (int) postXferReq.invokeExact(agent, request, options);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_post_xfer_req", t);
        }
    }

    int getXferStatus(long agent, long request)
    {
        try {
            return (int) getXferStatus.invokeExact(agent, request);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_get_xfer_status", t);
        }
    }

    int releaseXferReq(long agent, long request)
    {
        try {
            return (int) releaseXferReq.invokeExact(agent, request);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_release_xfer_req", t);
        }
    }

    int destroyXferReq(long request)
    {
        try {
            return (int) destroyXferReq.invokeExact(request);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_xfer_req", t);
        }
    }

    int createNotifMap(MemorySegment mapOut)
    {
        try {
            return (int) createNotifMap.invokeExact(mapOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_create_notif_map", t);
        }
    }

    int destroyNotifMap(long map)
    {
        try {
            return (int) destroyNotifMap.invokeExact(map);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_destroy_notif_map", t);
        }
    }

    int getNotifs(long agent, long map, long options)
    {
        try {
            return (int) getNotifs.invokeExact(agent, map, options);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_get_notifs", t);
        }
    }

    int notifMapSize(long map, MemorySegment sizeOut)
    {
        try {
            return (int) notifMapSize.invokeExact(map, sizeOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_notif_map_size", t);
        }
    }

    int notifMapGetAgentAt(long map, long index, MemorySegment nameOut)
    {
        try {
            return (int) notifMapGetAgentAt.invokeExact(map, index, nameOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_notif_map_get_agent_at", t);
        }
    }

    int notifMapGetNotifsSize(long map, MemorySegment agentName, MemorySegment sizeOut)
    {
        try {
            return (int) notifMapGetNotifsSize.invokeExact(map, agentName, sizeOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_notif_map_get_notifs_size", t);
        }
    }

    int notifMapGetNotif(long map, MemorySegment agentName, long index, MemorySegment dataOut, MemorySegment lengthOut)
    {
        try {
            return (int) notifMapGetNotif.invokeExact(map, agentName, index, dataOut, lengthOut);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_notif_map_get_notif", t);
        }
    }

    int notifMapClear(long map)
    {
        try {
            return (int) notifMapClear.invokeExact(map);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_notif_map_clear", t);
        }
    }

    int genNotif(long agent, MemorySegment remoteAgent, MemorySegment data, long length, long options)
    {
        try {
            return (int) genNotif.invokeExact(agent, remoteAgent, data, length, options);
        }
        catch (Throwable t) {
            throw bug("nixl_capi_gen_notif", t);
        }
    }

    private boolean isStub()
    {
        try {
            return (boolean) isStub.invokeExact();
        }
        catch (Throwable t) {
            throw bug("nixl_capi_is_stub", t);
        }
    }
}
