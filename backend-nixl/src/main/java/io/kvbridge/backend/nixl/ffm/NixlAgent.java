package io.kvbridge.backend.nixl.ffm;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.nixl.ffm.NixlStatus.Meaning;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.TransferOp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One NIXL agent with its UCX backend, bound through FFM. Native handles travel as {@code long}
 * addresses; every failing status arrives as a {@link KvBridgeException} naming the C function,
 * the status and the values involved.
 *
 * <p>Threads: NIXL's agent takes no lock of its own here, so one thread at a time calls it: the
 * holder of the lock the agent was opened with, or, opened without one, the thread that opened it.
 * A call from any other thread is refused before it reaches NIXL.
 */
public final class NixlAgent implements AutoCloseable
{
    /** {@code nixl_capi_agent_config_t}: 40 bytes, align 8 (x86-64 SysV). */
    static final StructLayout CONFIG = MemoryLayout.structLayout(
            JAVA_BOOLEAN.withName("enable_prog_thread"),
            JAVA_BOOLEAN.withName("enable_listen_thread"),
            MemoryLayout.paddingLayout(2),
            JAVA_INT.withName("listen_port"),
            JAVA_INT.withName("thread_sync"),
            JAVA_INT.withName("num_workers"),
            JAVA_LONG.withName("pthr_delay_us"),
            JAVA_LONG.withName("lthr_delay_us"),
            JAVA_BOOLEAN.withName("capture_telemetry"),
            MemoryLayout.paddingLayout(7));

    static final int MEM_DRAM = 0;
    static final int MEM_VRAM = 1;
    static final int THREAD_SYNC_NONE = 0;
    static final int XFER_OP_READ = 0;
    static final int XFER_OP_WRITE = 1;

    private static final long TELEMETRY_BYTES = 40;
    private static final long TELEMETRY_DESCRIPTORS_OFFSET = 32;
    private static final Meaning SETUP = new Meaning(ErrorCode.BACKEND_UNAVAILABLE, ErrorCode.BACKEND_UNAVAILABLE, ErrorCode.BACKEND_UNAVAILABLE, false);
    private static final Meaning INTERNAL = NixlStatus.INTERNAL;
    private static final Meaning REGISTER_HOST = new Meaning(ErrorCode.INVALID_ARGUMENT, ErrorCode.NATIVE_ERROR, ErrorCode.MEMORY_KIND_UNSUPPORTED, false);
    private static final Meaning REGISTER_DEVICE = new Meaning(ErrorCode.INVALID_ARGUMENT, ErrorCode.MEMORY_KIND_UNSUPPORTED, ErrorCode.MEMORY_KIND_UNSUPPORTED, false);
    private static final Meaning DEREGISTER = new Meaning(ErrorCode.INVALID_ARGUMENT, ErrorCode.NATIVE_ERROR, ErrorCode.NOT_REGISTERED, true);
    private static final Meaning PREPARE_LOCAL = new Meaning(ErrorCode.INVALID_ARGUMENT, ErrorCode.NATIVE_ERROR, ErrorCode.DESCRIPTOR_OUT_OF_RANGE, true);
    private static final Meaning PREPARE_REMOTE = new Meaning(ErrorCode.INVALID_ARGUMENT, ErrorCode.NATIVE_ERROR, ErrorCode.PEER_UNKNOWN, true);
    private static final Meaning MAKE = new Meaning(ErrorCode.INVALID_ARGUMENT, ErrorCode.NATIVE_ERROR, ErrorCode.PEER_UNKNOWN, false);
    private static final Meaning TRANSFER = new Meaning(ErrorCode.INVALID_ARGUMENT, ErrorCode.TRANSFER_FAILED, ErrorCode.PEER_UNKNOWN, false);

    private final NixlLibrary nixl;
    private final String name;
    private final Thread opener = Thread.currentThread();
    // null: confined to the opener
    private final ReentrantLock lock;
    // shared, as the lock's holder may be any thread; the lock keeps its use to one thread at a time
    private final Arena arena = Arena.ofShared();
    private final MemorySegment outAddress = arena.allocate(ADDRESS);
    // nixl_capi_xfer_telemetry_s: five uint64_t, the descriptor count after merging last
    private final MemorySegment telemetry = arena.allocate(TELEMETRY_BYTES, Long.BYTES);
    private final NixlPeerMetadata metadata;
    private MemorySegment localIndices = arena.allocate(JAVA_INT, 64);
    private MemorySegment remoteIndices = arena.allocate(JAVA_INT, 64);

    // opaque NIXL handles, 0 when absent
    private long agent;
    private long backend;
    private long hint;
    private long requestOptions;
    private NixlNotifications notifications;
    private boolean closed;

    /**
     * Creates the agent and its UCX backend.
     *
     * @param nixl the bound library.
     * @param name the agent name, unique among peers.
     * @param progressThread whether NIXL runs its own progress thread.
     * @param captureTelemetry whether NIXL records per-request telemetry.
     * @param progressDelayMicros the longest NIXL's progress thread waits for an event before it polls UCX again.
     * @param ucxConfig UCX settings for the UCX backend ({@code NAME=VALUE,...}); empty for none.
     * @param lock held by whichever thread calls the agent; null to confine it to the calling thread.
     */
    NixlAgent(NixlLibrary nixl, String name, boolean progressThread, boolean captureTelemetry, long progressDelayMicros, String ucxConfig,
            ReentrantLock lock)
    {
        this.lock = lock;
        this.nixl = requireNonNull(nixl, "nixl is null");
        this.name = requireNonNull(name, "name is null");
        this.metadata = new NixlPeerMetadata(nixl, name, arena);
        try {
            MemorySegment config = arena.allocate(CONFIG);
            config.set(JAVA_BOOLEAN, CONFIG.byteOffset(groupElement("enable_prog_thread")), progressThread);
            config.set(JAVA_BOOLEAN, CONFIG.byteOffset(groupElement("enable_listen_thread")), false);
            config.set(JAVA_INT, CONFIG.byteOffset(groupElement("listen_port")), 0);
            // no NIXL lock: the caller already makes one call at a time (see the class comment)
            config.set(JAVA_INT, CONFIG.byteOffset(groupElement("thread_sync")), THREAD_SYNC_NONE);
            config.set(JAVA_INT, CONFIG.byteOffset(groupElement("num_workers")), 1);
            config.set(JAVA_LONG, CONFIG.byteOffset(groupElement("pthr_delay_us")), progressDelayMicros);
            config.set(JAVA_LONG, CONFIG.byteOffset(groupElement("lthr_delay_us")), 100_000L);
            config.set(JAVA_BOOLEAN, CONFIG.byteOffset(groupElement("capture_telemetry")), captureTelemetry);
            agent = create((int) nixl.createConfiguredAgent.invokeExact(arena.allocateFrom(name), config, outAddress), "nixl_capi_create_configured_agent",
                    SETUP, "creating agent name=" + name);
            createBackend(requireNonNull(ucxConfig, "ucxConfig is null"));
            hint = create((int) nixl.createOptArgs.invokeExact(outAddress), "nixl_capi_create_opt_args", INTERNAL, "creating the backend hint");
            check((int) nixl.optArgsAddBackend.invokeExact(hint, backend), "nixl_capi_opt_args_add_backend", INTERNAL, "hinting the UCX backend");
            requestOptions = create((int) nixl.createOptArgs.invokeExact(outAddress), "nixl_capi_create_opt_args", INTERNAL, "creating request options");
            check((int) nixl.optArgsAddBackend.invokeExact(requestOptions, backend), "nixl_capi_opt_args_add_backend", INTERNAL, "hinting the UCX backend");
            notifications = new NixlNotifications(nixl, name, arena);
        }
        catch (Throwable t) {
            RuntimeException e = NixlLibrary.rethrow(t);
            try {
                close();
            }
            catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private void createBackend(String ucxConfig) throws Throwable
    {
        long params = create((int) nixl.createParams.invokeExact(outAddress), "nixl_capi_create_params", INTERNAL, "creating UCX parameters");
        try {
            check((int) nixl.paramsAdd.invokeExact(params, arena.allocateFrom("num_workers"), arena.allocateFrom("1")), "nixl_capi_params_add", INTERNAL,
                    "setting num_workers=1");
            if (!ucxConfig.isEmpty()) {
                check((int) nixl.paramsAdd.invokeExact(params, arena.allocateFrom("engine_config"), arena.allocateFrom(ucxConfig)), "nixl_capi_params_add",
                        INTERNAL, "setting engine_config=" + ucxConfig);
            }
            int status = (int) nixl.createBackend.invokeExact(agent, arena.allocateFrom("UCX"), params, outAddress);
            if (status != NixlStatus.SUCCESS) {
                throw NixlStatus.error("nixl_capi_create_backend", status, SETUP, nixl.level, "creating the UCX backend of agent " + name
                        + (ucxConfig.isEmpty() ? "" : " with UCX settings " + ucxConfig)
                        + "; check that NIXL_PLUGIN_DIR names the folder holding libplugin_UCX.so and that UCX loads; " + Nixl.backendStartCauses());
            }
            backend = outAddress.get(JAVA_LONG, 0);
        }
        finally {
            check((int) nixl.destroyParams.invokeExact(params), "nixl_capi_destroy_params", INTERNAL, "destroying UCX parameters");
        }
    }

    /** Checks a create call's status and reads the handle it wrote, only on success. */
    private long create(int status, String function, Meaning meaning, String context)
    {
        check(status, function, meaning, context);
        return outAddress.get(JAVA_LONG, 0);
    }

    private void check(int status, String function, Meaning meaning, String context)
    {
        NixlStatus.check(status, function, meaning, nixl.level, context);
    }

    private void checkOpen()
    {
        if (lock == null ? Thread.currentThread() != opener : !lock.isHeldByCurrentThread()) {
            throw new IllegalStateException("NIXL agent " + name + " was called from thread " + Thread.currentThread().getName() + (lock == null
                    ? ", but is confined to thread " + opener.getName() : " without holding its lock"));
        }
        if (closed) {
            throw new KvBridgeException(ErrorCode.CLOSED, "NIXL agent " + name + " is closed");
        }
    }

    private static int memoryType(MemoryKind kind)
    {
        return switch (kind) {
            case HOST -> MEM_DRAM;
            case DEVICE -> MEM_VRAM;
        };
    }

    /** @return the agent's name, as peers and notifications know it. */
    public String name()
    {
        return name;
    }

    /**
     * Registers one contiguous allocation with every backend that accepts its memory kind.
     *
     * @param kind host or device memory.
     * @param device device index (0 for host).
     * @param address first byte.
     * @param bytes length.
     */
    public void registerMemory(MemoryKind kind, int device, long address, long bytes)
    {
        changeRegistration(kind, device, address, bytes, true);
    }

    /**
     * Deregisters an allocation exactly as registered.
     *
     * @param kind as registered.
     * @param device as registered.
     * @param address as registered.
     * @param bytes as registered.
     */
    public void deregisterMemory(MemoryKind kind, int device, long address, long bytes)
    {
        changeRegistration(kind, device, address, bytes, false);
    }

    private void changeRegistration(MemoryKind kind, int device, long address, long bytes, boolean register)
    {
        checkOpen();
        String what = String.format(Locale.ROOT, "%s %s memory address=0x%x bytes=%d device=%d", register ? "registering" : "deregistering",
                kind, address, bytes, device);
        try {
            long list = create((int) nixl.createRegDlist.invokeExact(memoryType(kind), outAddress), "nixl_capi_create_reg_dlist", INTERNAL, what);
            try {
                check((int) nixl.regDlistAddDesc.invokeExact(list, address, bytes, (long) device, MemorySegment.NULL, 0L), "nixl_capi_reg_dlist_add_desc",
                        INTERNAL, what);
                if (register) {
                    check((int) nixl.registerMem.invokeExact(agent, list, hint), "nixl_capi_register_mem",
                            kind == MemoryKind.DEVICE ? REGISTER_DEVICE : REGISTER_HOST, what);
                }
                else {
                    check((int) nixl.deregisterMem.invokeExact(agent, list, hint), "nixl_capi_deregister_mem", DEREGISTER, what);
                }
            }
            finally {
                check((int) nixl.destroyRegDlist.invokeExact(list), "nixl_capi_destroy_reg_dlist", INTERNAL, what);
            }
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
    }

    /** @return the agent's metadata blob: connection info and every registration made so far; opaque bytes. */
    public byte[] localMetadata()
    {
        checkOpen();
        return metadata.local(agent);
    }

    /**
     * Loads a peer's blob (or merges it into what is known of that peer).
     *
     * @param blob the peer's {@link #localMetadata()}.
     * @return the peer's agent name.
     */
    public String loadRemoteMetadata(byte[] blob)
    {
        checkOpen();
        return metadata.load(agent, blob);
    }

    /**
     * Tells whether any metadata of a peer is loaded.
     *
     * @param peer the peer's agent name.
     * @return true when loaded.
     */
    public boolean remoteMetadataLoaded(String peer)
    {
        checkOpen();
        return metadata.loaded(agent, peer);
    }

    /**
     * Forgets a peer and disconnects from it; release its prepared lists first.
     *
     * @param peer the peer's agent name.
     * @return false when NIXL did not know the peer (already dropped).
     */
    public boolean invalidateRemoteMetadata(String peer)
    {
        checkOpen();
        return metadata.invalidate(agent, peer);
    }

    /**
     * Prepares a list of local descriptors.
     *
     * @param kind memory kind.
     * @param device device index.
     * @param addresses descriptor addresses.
     * @param lengths descriptor lengths.
     * @param count descriptors to use.
     * @return the prepared-list handle.
     */
    public long prepareLocal(MemoryKind kind, int device, long[] addresses, long[] lengths, int count)
    {
        return prepare("", kind, device, addresses, lengths, count, PREPARE_LOCAL);
    }

    /**
     * Prepares a list of a peer's descriptors.
     *
     * @param peer the peer's agent name.
     * @param kind memory kind.
     * @param device device index.
     * @param addresses descriptor addresses.
     * @param lengths descriptor lengths.
     * @param count descriptors to use.
     * @return the prepared-list handle.
     */
    public long prepareRemote(String peer, MemoryKind kind, int device, long[] addresses, long[] lengths, int count)
    {
        if (peer.isEmpty()) {
            throw new IllegalArgumentException("an empty peer name means the local side to NIXL");
        }
        return prepare(peer, kind, device, addresses, lengths, count, PREPARE_REMOTE);
    }

    private long prepare(String side, MemoryKind kind, int device, long[] addresses, long[] lengths, int count, Meaning meaning)
    {
        checkOpen();
        String what = String.format(Locale.ROOT, "preparing %d %s descriptors on device %d of %s", count, kind, device,
                side.isEmpty() ? "agent " + name : "peer " + side);
        try (Arena call = Arena.ofConfined()) {
            long list = create((int) nixl.createXferDlist.invokeExact(memoryType(kind), outAddress), "nixl_capi_create_xfer_dlist", INTERNAL, what);
            try {
                for (int i = 0; i < count; i++) {
                    check((int) nixl.xferDlistAddDesc.invokeExact(list, addresses[i], lengths[i], (long) device), "nixl_capi_xfer_dlist_add_desc", INTERNAL,
                            what);
                }
                // never read the slot after a failure: NIXL up to 1.4 wrote a half-built handle there
                return create((int) nixl.prepXferDlist.invokeExact(agent, call.allocateFrom(side), list, outAddress, hint), "nixl_capi_prep_xfer_dlist",
                        meaning, what + ": NIXL found no registration covering every descriptor");
            }
            finally {
                check((int) nixl.destroyXferDlist.invokeExact(list), "nixl_capi_destroy_xfer_dlist", INTERNAL, what);
            }
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
    }

    /**
     * Releases a prepared list; requests already made from it stay valid.
     *
     * @param preparedList from a prepare call.
     */
    public void releasePrepared(long preparedList)
    {
        checkOpen();
        try {
            check((int) nixl.releaseXferDlistHandle.invokeExact(agent, preparedList), "nixl_capi_release_xfer_dlist_handle", INTERNAL,
                    "releasing a prepared list");
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
    }

    /**
     * Makes a transfer request pairing descriptors by index, with an optional notification.
     *
     * @param op READ or WRITE.
     * @param local local prepared list.
     * @param localIndexArray indices into it.
     * @param remote remote prepared list.
     * @param remoteIndexArray indices into it.
     * @param count pairs.
     * @param notification sent after the data, or null.
     * @return the request handle.
     */
    public long makeRequest(TransferOp op, long local, int[] localIndexArray, long remote, int[] remoteIndexArray, int count, byte[] notification)
    {
        checkOpen();
        long indexBytes = (long) count * Integer.BYTES;
        if (localIndices.byteSize() < indexBytes) {
            localIndices = arena.allocate(JAVA_INT, Math.max(count, localIndices.byteSize() / Integer.BYTES * 2));
            remoteIndices = arena.allocate(JAVA_INT, localIndices.byteSize() / Integer.BYTES);
        }
        MemorySegment.copy(localIndexArray, 0, localIndices, JAVA_INT, 0, count);
        MemorySegment.copy(remoteIndexArray, 0, remoteIndices, JAVA_INT, 0, count);
        int status;
        try {
            notifications.setForNextRequest(requestOptions, notification);
            status = (int) nixl.makeXferReq.invokeExact(agent, op == TransferOp.READ ? XFER_OP_READ : XFER_OP_WRITE, local, localIndices.address(),
                    (long) count, remote, remoteIndices.address(), (long) count, outAddress.address(), requestOptions);
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
        if (status != NixlStatus.SUCCESS) {
            throw NixlStatus.error("nixl_capi_make_xfer_req", status, MAKE, nixl.level, String.format(Locale.ROOT,
                    "making a %s request of %d descriptor pairs: indices or lengths refused, or the peer was forgotten since its list was prepared", op, count));
        }
        return outAddress.get(JAVA_LONG, 0);
    }

    /**
     * Posts a request, keeping the notification given when it was made.
     *
     * @param request handle.
     * @return true when it finished inside the call.
     */
    public boolean postRequest(long request)
    {
        checkOpen();
        int status;
        try {
            // NULL options: non-NULL ones without a notification would wipe the one set at make time
            status = (int) nixl.postXferReq.invokeExact(agent, request, 0L);
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
        return doneOrThrow(status, "nixl_capi_post_xfer_req", "posting a transfer: the peer disconnected, was forgotten, or the request is still running");
    }

    /**
     * Polls a posted request; the call that first sees the data in place sends its notification.
     *
     * @param request handle.
     * @return true when done.
     */
    public boolean pollRequest(long request)
    {
        checkOpen();
        int status;
        try {
            status = (int) nixl.getXferStatus.invokeExact(agent, request);
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
        return doneOrThrow(status, "nixl_capi_get_xfer_status", "polling a transfer: it failed in the backend, the peer disconnected, or the peer was forgotten");
    }

    /**
     * Reads how many descriptors NIXL made of a finished request after merging its index runs,
     * from the request's telemetry.
     *
     * @param request a request that completed.
     * @return the count, or -1 when NIXL records no telemetry (the agent was opened without it, or
     *     {@code NIXL_TELEMETRY_ENABLE} turned it off).
     */
    public long mergedDescriptors(long request)
    {
        checkOpen();
        int status;
        try {
            status = (int) nixl.getXferTelemetry.invokeExact(agent, request, telemetry.address());
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
        if (status == NixlStatus.NO_TELEMETRY) {
            return -1;
        }
        check(status, "nixl_capi_get_xfer_telemetry", INTERNAL, "reading the telemetry of a finished request");
        return telemetry.get(JAVA_LONG, TELEMETRY_DESCRIPTORS_OFFSET);
    }

    private boolean doneOrThrow(int status, String function, String context)
    {
        if (status == NixlStatus.SUCCESS || status == NixlStatus.IN_PROG) {
            return status == NixlStatus.SUCCESS;
        }
        throw NixlStatus.error(function, status, TRANSFER, nixl.level, context);
    }

    /**
     * Releases (cancelling if still running) and destroys a request.
     *
     * @param request handle.
     * @return false when NIXL could not cancel it yet; the handle stays valid, retry later.
     */
    public boolean releaseRequest(long request)
    {
        checkOpen();
        int released;
        try {
            released = (int) nixl.releaseXferReq.invokeExact(agent, request);
            if (released == NixlStatus.BACKEND) {
                return false;
            }
            check(released, "nixl_capi_release_xfer_req", INTERNAL, "releasing a transfer request");
            check((int) nixl.destroyXferReq.invokeExact(request), "nixl_capi_destroy_xfer_req", INTERNAL, "destroying a released transfer request");
            return true;
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
    }

    /**
     * Sends a notification without data.
     *
     * @param peer the peer's agent name.
     * @param message bytes.
     */
    public void sendNotification(String peer, byte[] message)
    {
        checkOpen();
        try {
            notifications.send(agent, peer, message);
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
    }

    /**
     * Moves every notification received so far into a sink.
     *
     * @param sink receives sender and message copies.
     * @return the number moved.
     */
    public int drainNotifications(NotificationSink sink)
    {
        checkOpen();
        try {
            return notifications.drain(agent, sink);
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
    }

    /** Destroys the backend and the agent; idempotent. Release requests and lists first. */
    @Override
    public void close()
    {
        if (closed) {
            return;
        }
        closed = true;
        KvBridgeException first = null;
        if (notifications != null) {
            try {
                first = notifications.close();
            }
            catch (Throwable t) {
                throw NixlLibrary.rethrow(t);
            }
        }
        first = destroy(first, requestOptions, nixl.destroyOptArgs, "nixl_capi_destroy_opt_args");
        first = destroy(first, hint, nixl.destroyOptArgs, "nixl_capi_destroy_opt_args");
        first = destroy(first, backend, nixl.destroyBackend, "nixl_capi_destroy_backend");
        first = destroy(first, agent, nixl.destroyAgent, "nixl_capi_destroy_agent");
        requestOptions = hint = backend = agent = 0;
        arena.close();
        if (first != null) {
            throw first;
        }
    }

    private KvBridgeException destroy(KvBridgeException first, long handle, MethodHandle destroyer, String function)
    {
        if (handle == 0) {
            return first;
        }
        int status;
        try {
            status = (int) destroyer.invokeExact(handle);
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
        if (status == NixlStatus.SUCCESS || first != null) {
            return first;
        }
        return NixlStatus.error(function, status, INTERNAL, nixl.level, "closing agent " + name);
    }

    @Override
    public String toString()
    {
        return "NixlAgent[" + name + ", " + nixl.path + "]";
    }
}
