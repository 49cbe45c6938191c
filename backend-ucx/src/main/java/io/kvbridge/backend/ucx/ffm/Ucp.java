package io.kvbridge.backend.ucx.ffm;

import static io.kvbridge.backend.ucx.ffm.UcpLayouts.CONTEXT_ATTR;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.EP_PARAMS;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.MEM_ATTR;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.MEM_MAP_PARAMS;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.PARAMS;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.REQUEST_PARAM;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.TAG_RECV_INFO;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.WORKER_PARAMS;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The UCP calls the transport makes, typed for Java: handles are {@code long} addresses, statuses
 * are checked on every call, and a failing call throws {@code NATIVE_ERROR} naming the function and
 * UCX's own status string. This is the only public class of the package; it is internal to the
 * transport and not part of kvbridge's API.
 *
 * <p>Every method that takes a worker, endpoint, memory handle or remote key must be called on the
 * thread that owns the worker (workers are created in {@code UCS_THREAD_MODE_SINGLE}).
 */
public final class Ucp
{
    /** {@code UCS_OK}. */
    public static final byte OK = 0;
    /** {@code UCS_INPROGRESS}. */
    public static final byte IN_PROGRESS = 1;
    /** {@code UCS_ERR_CANCELED}. */
    public static final byte ERR_CANCELED = -16;
    /** {@code UCS_ERR_CONNECTION_RESET}. */
    public static final byte ERR_CONNECTION_RESET = -25;

    /** {@code UCP_FEATURE_TAG}. */
    public static final long FEATURE_TAG = 1L;
    /** {@code UCP_FEATURE_RMA}. */
    public static final long FEATURE_RMA = 1L << 1;
    /** {@code UCP_FEATURE_WAKEUP}. */
    public static final long FEATURE_WAKEUP = 1L << 4;

    /** {@code UCS_MEMORY_TYPE_CUDA} as a bit of {@link #memoryTypes}. */
    public static final long MEMORY_TYPE_CUDA_BIT = 1L << 1;

    private static final int API_MAJOR = 1;
    private static final int API_MINOR = 13;
    // UCS_ERR_LAST: pointer values from here up to -1 encode a status (UCS_PTR_IS_ERR)
    private static final long ERR_LAST = -100L;

    private static final long PARAM_FIELD_FEATURES = 1L;
    private static final long PARAM_FIELD_NAME = 1L << 8;
    private static final long WORKER_PARAM_FIELD_THREAD_MODE = 1L;
    private static final long WORKER_PARAM_FIELD_NAME = 1L << 6;
    private static final int THREAD_MODE_SINGLE = 0;
    private static final long EP_PARAM_FIELD_REMOTE_ADDRESS = 1L;
    private static final long EP_PARAM_FIELD_ERR_HANDLING_MODE = 1L << 1;
    private static final long EP_PARAM_FIELD_ERR_HANDLER = 1L << 2;
    private static final int ERR_HANDLING_MODE_PEER = 1;
    private static final long MEM_MAP_FIELD_ADDRESS = 1L;
    private static final long MEM_MAP_FIELD_LENGTH = 1L << 1;
    private static final long MEM_MAP_FIELD_FLAGS = 1L << 2;
    private static final int MEM_MAP_ALLOCATE = 1 << 1;
    private static final long MEM_ATTR_FIELD_ADDRESS = 1L;
    private static final long MEM_ATTR_FIELD_LENGTH = 1L << 1;
    private static final int OP_ATTR_FIELD_FLAGS = 1 << 4;
    private static final int OP_ATTR_FIELD_MEMH = 1 << 8;
    private static final int EP_CLOSE_FLAG_FORCE = 1;
    private static final long CONTEXT_ATTR_FIELD_MEMORY_TYPES = 1L << 2;

    private static final Map<Long, EndpointErrorListener> ERROR_LISTENERS = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT_ENDPOINT_TOKEN = new AtomicLong(1);

    private Ucp()
    {
    }

    /** Told, on the worker's owner thread, that an endpoint failed (its peer died or closed). */
    @FunctionalInterface
    public interface EndpointErrorListener
    {
        /**
         * Handles the failure; must not throw and must not call UCX.
         *
         * @param token the token the endpoint was created with.
         * @param status the UCX status, such as {@link #ERR_CONNECTION_RESET}.
         */
        void endpointFailed(long token, byte status);
    }

    /**
     * Tells why UCX cannot be used from this JVM, loading the libraries on first use.
     *
     * @return the problem with its fix, or empty when every library and symbol was found.
     */
    public static Optional<String> loadProblem()
    {
        return Optional.ofNullable(Loaded.PROBLEM);
    }

    /**
     * Tells whether the UCX libraries (or one of their symbols) could not be found at all, as
     * opposed to being found but unusable.
     *
     * @return true when UCX is not installed, or too old to have the functions kvbridge calls.
     */
    public static boolean librariesMissing()
    {
        return Loaded.LIBRARIES_MISSING;
    }

    /**
     * Returns the library version.
     *
     * @return {@code major.minor.release}, e.g. {@code 1.13.1}.
     */
    public static String version()
    {
        return withScratch(scratch -> {
            MemorySegment numbers = scratch.allocate(JAVA_INT, 3);
            UcpNative.UCP_GET_VERSION.invokeExact(numbers.address(), numbers.address() + 4, numbers.address() + 8);
            return numbers.getAtIndex(JAVA_INT, 0) + "." + numbers.getAtIndex(JAVA_INT, 1) + "." + numbers.getAtIndex(JAVA_INT, 2);
        });
    }

    /**
     * Tells whether this library version is new enough.
     *
     * @param version from {@link #version()}.
     * @return true for 1.13 and newer.
     */
    public static boolean supportedVersion(String version)
    {
        String[] parts = version.split("\\.");
        int major = Integer.parseInt(parts[0]);
        int minor = Integer.parseInt(parts[1]);
        return major > API_MAJOR || (major == API_MAJOR && minor >= API_MINOR);
    }

    /**
     * Reads the configuration from the {@code UCX_*} environment, then applies overrides.
     *
     * @param overrides UCX configuration names without the {@code UCX_} prefix, with values.
     * @return the configuration handle; release it with {@link #configRelease}.
     * @throws KvBridgeException {@code CONFIG_INVALID} naming an override UCX refused.
     */
    public static long configRead(Map<String, String> overrides)
    {
        long config = withScratch(scratch -> {
            MemorySegment out = scratch.allocate(ADDRESS);
            check((byte) UcpNative.UCP_CONFIG_READ.invokeExact(0L, 0L, out.address()), "ucp_config_read");
            return out.get(JAVA_LONG, 0);
        });
        return withScratch(scratch -> {
            for (Map.Entry<String, String> override : overrides.entrySet()) {
                byte status = (byte) UcpNative.UCP_CONFIG_MODIFY.invokeExact(config,
                        scratch.allocateFrom(override.getKey()).address(), scratch.allocateFrom(override.getValue()).address());
                if (status != OK) {
                    configRelease(config);
                    throw new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT,
                            "UCX refused %s=%s: %s; check the name and value against 'ucx_info -c'", override.getKey(), override.getValue(), statusString(status)));
                }
            }
            return config;
        });
    }

    /**
     * Releases a configuration.
     *
     * @param config from {@link #configRead}.
     */
    public static void configRelease(long config)
    {
        run(() -> {
            UcpNative.UCP_CONFIG_RELEASE.invokeExact(config);
        });
    }

    /**
     * Creates a context ({@code ucp_init}).
     *
     * @param config from {@link #configRead}; may be released afterwards.
     * @param features {@code FEATURE_*} bits.
     * @param name context name shown in UCX diagnostics.
     * @return the context handle.
     */
    public static long init(long config, long features, String name)
    {
        return withScratch(scratch -> {
            MemorySegment params = scratch.allocate(PARAMS);
            params.set(JAVA_LONG, UcpLayouts.PARAMS_FIELD_MASK, PARAM_FIELD_FEATURES | PARAM_FIELD_NAME);
            params.set(JAVA_LONG, UcpLayouts.PARAMS_FEATURES, features);
            params.set(ADDRESS, UcpLayouts.PARAMS_NAME, scratch.allocateFrom(name));
            MemorySegment out = scratch.allocate(ADDRESS);
            check((byte) UcpNative.UCP_INIT_VERSION.invokeExact(API_MAJOR, API_MINOR, params.address(), config, out.address()), "ucp_init");
            return out.get(JAVA_LONG, 0);
        });
    }

    /**
     * Destroys a context; every worker and mapping of it must be gone.
     *
     * @param context the context.
     */
    public static void cleanup(long context)
    {
        run(() -> {
            UcpNative.UCP_CLEANUP.invokeExact(context);
        });
    }

    /**
     * Returns the memory types the context can register.
     *
     * @param context the context.
     * @return a bit set of {@code ucs_memory_type_t}; bit 0 is host memory.
     */
    public static long memoryTypes(long context)
    {
        return withScratch(scratch -> {
            MemorySegment attr = scratch.allocate(CONTEXT_ATTR);
            attr.set(JAVA_LONG, UcpLayouts.CONTEXT_ATTR_FIELD_MASK, CONTEXT_ATTR_FIELD_MEMORY_TYPES);
            check((byte) UcpNative.UCP_CONTEXT_QUERY.invokeExact(context, attr.address()), "ucp_context_query");
            return attr.get(JAVA_LONG, UcpLayouts.CONTEXT_ATTR_MEMORY_TYPES);
        });
    }

    /**
     * Returns what {@code ucp_context_print_info} writes: components, memory domains and the
     * transport resources the context selected.
     *
     * @param context the context.
     * @return the text.
     */
    public static String contextInfo(long context)
    {
        return withScratch(scratch -> {
            MemorySegment bufferOut = scratch.allocate(ADDRESS);
            MemorySegment sizeOut = scratch.allocate(JAVA_LONG);
            long stream = (long) UcpNative.OPEN_MEMSTREAM.invokeExact(bufferOut.address(), sizeOut.address());
            if (stream == 0) {
                throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "open_memstream failed; cannot list UCX resources");
            }
            UcpNative.UCP_CONTEXT_PRINT_INFO.invokeExact(context, stream);
            int closed = (int) UcpNative.FCLOSE.invokeExact(stream);
            long buffer = bufferOut.get(JAVA_LONG, 0);
            try {
                if (closed != 0) {
                    throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "fclose of the UCX info stream failed");
                }
                byte[] text = new byte[(int) Math.min(sizeOut.get(JAVA_LONG, 0), 1 << 20)];
                MemorySegment.copy(pointer(buffer, text.length), JAVA_BYTE, 0, text, 0, text.length);
                return new String(text, StandardCharsets.UTF_8);
            }
            finally {
                UcpNative.FREE.invokeExact(buffer);
            }
        });
    }

    /**
     * Creates a worker in single-thread mode: only the calling thread may use it afterwards.
     *
     * @param context the context.
     * @param name worker name shown in UCX diagnostics.
     * @return the worker handle.
     */
    public static long workerCreate(long context, String name)
    {
        return withScratch(scratch -> {
            MemorySegment params = scratch.allocate(WORKER_PARAMS);
            params.set(JAVA_LONG, UcpLayouts.WORKER_PARAMS_FIELD_MASK, WORKER_PARAM_FIELD_THREAD_MODE | WORKER_PARAM_FIELD_NAME);
            params.set(JAVA_INT, UcpLayouts.WORKER_PARAMS_THREAD_MODE, THREAD_MODE_SINGLE);
            params.set(ADDRESS, UcpLayouts.WORKER_PARAMS_NAME, scratch.allocateFrom(name));
            MemorySegment out = scratch.allocate(ADDRESS);
            check((byte) UcpNative.UCP_WORKER_CREATE.invokeExact(context, params.address(), out.address()), "ucp_worker_create");
            return out.get(JAVA_LONG, 0);
        });
    }

    /**
     * Destroys a worker; its endpoints must be closed.
     *
     * @param worker the worker.
     */
    public static void workerDestroy(long worker)
    {
        run(() -> {
            UcpNative.UCP_WORKER_DESTROY.invokeExact(worker);
        });
    }

    /**
     * Returns the worker's address, the bytes a peer needs to create an endpoint to it.
     *
     * @param worker the worker.
     * @return a copy of the address.
     */
    public static byte[] workerAddress(long worker)
    {
        return withScratch(scratch -> {
            MemorySegment addressOut = scratch.allocate(ADDRESS);
            MemorySegment lengthOut = scratch.allocate(JAVA_LONG);
            check((byte) UcpNative.UCP_WORKER_GET_ADDRESS.invokeExact(worker, addressOut.address(), lengthOut.address()), "ucp_worker_get_address");
            long address = addressOut.get(JAVA_LONG, 0);
            try {
                return pointer(address, lengthOut.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
            }
            finally {
                UcpNative.UCP_WORKER_RELEASE_ADDRESS.invokeExact(worker, address);
            }
        });
    }

    /**
     * Returns the worker's event file descriptor ({@code UCP_FEATURE_WAKEUP} contexts only).
     *
     * @param worker the worker.
     * @return the descriptor, owned by UCX.
     */
    public static int workerEventFd(long worker)
    {
        return withScratch(scratch -> {
            MemorySegment out = scratch.allocate(JAVA_INT);
            check((byte) UcpNative.UCP_WORKER_GET_EFD.invokeExact(worker, out.address()), "ucp_worker_get_efd");
            return out.get(JAVA_INT, 0);
        });
    }

    /**
     * Arms the worker's event descriptor before sleeping on it.
     *
     * @param worker the worker.
     * @return true when armed; false when events are pending and the worker must progress first.
     */
    public static boolean workerArm(long worker)
    {
        byte status;
        try {
            status = (byte) UcpNative.UCP_WORKER_ARM.invokeExact(worker);
        }
        catch (Throwable e) {
            throw bug(e);
        }
        if (status == OK) {
            return true;
        }
        if (status == -15) {
            // UCS_ERR_BUSY
            return false;
        }
        throw error("ucp_worker_arm", status);
    }

    /**
     * Progresses the worker once: completes requests, receives messages, runs error handlers.
     *
     * @param worker the worker.
     * @return the number of events processed.
     */
    public static int workerProgress(long worker)
    {
        try {
            return (int) UcpNative.UCP_WORKER_PROGRESS.invokeExact(worker);
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Allocates a token for an endpoint's error handler.
     *
     * @return a token unique in this JVM.
     */
    public static long newEndpointToken()
    {
        return NEXT_ENDPOINT_TOKEN.getAndIncrement();
    }

    /**
     * Creates an endpoint in peer error-handling mode: a dead peer fails its requests instead of
     * leaving them pending, and {@code listener} is told.
     *
     * @param worker the worker.
     * @param remoteAddress the peer worker's address.
     * @param token from {@link #newEndpointToken()}; identifies the endpoint to the listener.
     * @param listener told on the owner thread when the endpoint fails.
     * @return the endpoint handle.
     */
    public static long epCreate(long worker, byte[] remoteAddress, long token, EndpointErrorListener listener)
    {
        requireNonNull(listener, "listener is null");
        ERROR_LISTENERS.put(token, listener);
        try {
            return withScratch(scratch -> {
                MemorySegment params = scratch.allocate(EP_PARAMS);
                params.set(JAVA_LONG, UcpLayouts.EP_PARAMS_FIELD_MASK,
                        EP_PARAM_FIELD_REMOTE_ADDRESS | EP_PARAM_FIELD_ERR_HANDLING_MODE | EP_PARAM_FIELD_ERR_HANDLER);
                params.set(ADDRESS, UcpLayouts.EP_PARAMS_ADDRESS, scratch.allocateFrom(JAVA_BYTE, remoteAddress));
                params.set(JAVA_INT, UcpLayouts.EP_PARAMS_ERR_MODE, ERR_HANDLING_MODE_PEER);
                params.set(ADDRESS, UcpLayouts.EP_PARAMS_ERR_HANDLER_CB, Loaded.ERROR_HANDLER_STUB);
                params.set(JAVA_LONG, UcpLayouts.EP_PARAMS_ERR_HANDLER_ARG, token);
                MemorySegment out = scratch.allocate(ADDRESS);
                check((byte) UcpNative.UCP_EP_CREATE.invokeExact(worker, params.address(), out.address()), "ucp_ep_create");
                return out.get(JAVA_LONG, 0);
            });
        }
        catch (RuntimeException | Error e) {
            ERROR_LISTENERS.remove(token);
            throw e;
        }
    }

    /**
     * Starts closing an endpoint. Force mode drops whatever is outstanding (its requests complete
     * with {@link #ERR_CANCELED}); flush mode completes outstanding operations first.
     *
     * @param endpoint the endpoint.
     * @param force true for {@code UCP_EP_CLOSE_FLAG_FORCE}.
     * @param token the endpoint's token; its listener is forgotten.
     * @return a status pointer: 0 when closed, an error, or a request to poll.
     */
    public static long epCloseNbx(long endpoint, boolean force, long token)
    {
        ERROR_LISTENERS.remove(token);
        return withScratch(scratch -> {
            MemorySegment param = scratch.allocate(REQUEST_PARAM);
            if (force) {
                param.set(JAVA_INT, UcpLayouts.REQUEST_PARAM_OP_ATTR_MASK, OP_ATTR_FIELD_FLAGS);
                param.set(JAVA_INT, UcpLayouts.REQUEST_PARAM_FLAGS, EP_CLOSE_FLAG_FORCE);
            }
            return (long) UcpNative.UCP_EP_CLOSE_NBX.invokeExact(endpoint, param.address());
        });
    }

    /**
     * Starts flushing an endpoint: the request completes once every operation issued before it is
     * complete at the peer.
     *
     * @param endpoint the endpoint.
     * @param emptyParam a zeroed request parameter from {@link #newRequestParam}.
     * @return a status pointer: 0 when already flushed, an error, or a request to poll.
     */
    public static long epFlushNbx(long endpoint, MemorySegment emptyParam)
    {
        try {
            return (long) UcpNative.UCP_EP_FLUSH_NBX.invokeExact(endpoint, emptyParam.address());
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Starts flushing a worker: the request completes once every endpoint's outstanding operations
     * are complete and no transport connection is still being set up.
     *
     * @param worker the worker.
     * @param emptyParam a zeroed request parameter from {@link #newRequestParam}.
     * @return a status pointer: 0 when already flushed, an error, or a request to poll.
     */
    public static long workerFlushNbx(long worker, MemorySegment emptyParam)
    {
        try {
            return (long) UcpNative.UCP_WORKER_FLUSH_NBX.invokeExact(worker, emptyParam.address());
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Registers memory the caller owns.
     *
     * @param context the context.
     * @param address first byte.
     * @param length in bytes.
     * @return the memory handle.
     */
    public static long memMap(long context, long address, long length)
    {
        return memMap(context, address, length, 0, "ucp_mem_map");
    }

    /**
     * Lets UCX allocate and register memory in the form its transports move best (shared memory
     * on one host, so a peer's put is a plain copy).
     *
     * @param context the context.
     * @param length in bytes.
     * @return the memory handle; read the address with {@link #memAddress}.
     */
    public static long memAllocate(long context, long length)
    {
        return memMap(context, 0, length, MEM_MAP_ALLOCATE, "ucp_mem_map(UCP_MEM_MAP_ALLOCATE)");
    }

    private static long memMap(long context, long address, long length, int flags, String what)
    {
        return withScratch(scratch -> {
            MemorySegment params = scratch.allocate(MEM_MAP_PARAMS);
            params.set(JAVA_LONG, UcpLayouts.MEM_MAP_FIELD_MASK, MEM_MAP_FIELD_ADDRESS | MEM_MAP_FIELD_LENGTH | MEM_MAP_FIELD_FLAGS);
            params.set(JAVA_LONG, UcpLayouts.MEM_MAP_ADDRESS, address);
            params.set(JAVA_LONG, UcpLayouts.MEM_MAP_LENGTH, length);
            params.set(JAVA_INT, UcpLayouts.MEM_MAP_FLAGS, flags);
            MemorySegment out = scratch.allocate(ADDRESS);
            check((byte) UcpNative.UCP_MEM_MAP.invokeExact(context, params.address(), out.address()), what);
            return out.get(JAVA_LONG, 0);
        });
    }

    /**
     * Returns the first address of a mapping.
     *
     * @param memh the memory handle.
     * @return the address.
     */
    public static long memAddress(long memh)
    {
        return withScratch(scratch -> {
            MemorySegment attr = scratch.allocate(MEM_ATTR);
            attr.set(JAVA_LONG, UcpLayouts.MEM_ATTR_FIELD_MASK, MEM_ATTR_FIELD_ADDRESS | MEM_ATTR_FIELD_LENGTH);
            check((byte) UcpNative.UCP_MEM_QUERY.invokeExact(memh, attr.address()), "ucp_mem_query");
            return attr.get(JAVA_LONG, UcpLayouts.MEM_ATTR_ADDRESS);
        });
    }

    /**
     * Removes a registration; memory UCX allocated is freed.
     *
     * @param context the context.
     * @param memh the memory handle.
     */
    public static void memUnmap(long context, long memh)
    {
        run(() -> check((byte) UcpNative.UCP_MEM_UNMAP.invokeExact(context, memh), "ucp_mem_unmap"));
    }

    /**
     * Packs the remote key a peer needs to address a mapping.
     *
     * @param context the context.
     * @param memh the memory handle.
     * @return the packed key.
     */
    public static byte[] rkeyPack(long context, long memh)
    {
        return withScratch(scratch -> {
            MemorySegment bufferOut = scratch.allocate(ADDRESS);
            MemorySegment lengthOut = scratch.allocate(JAVA_LONG);
            check((byte) UcpNative.UCP_RKEY_PACK.invokeExact(context, memh, bufferOut.address(), lengthOut.address()), "ucp_rkey_pack");
            long buffer = bufferOut.get(JAVA_LONG, 0);
            try {
                return pointer(buffer, lengthOut.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
            }
            finally {
                UcpNative.UCP_RKEY_BUFFER_RELEASE.invokeExact(buffer);
            }
        });
    }

    /**
     * Unpacks a peer's remote key for use on one endpoint.
     *
     * @param endpoint the endpoint to the peer.
     * @param packed the peer's packed key; untrusted bytes are checked by UCX.
     * @return the remote key handle.
     */
    public static long rkeyUnpack(long endpoint, byte[] packed)
    {
        return withScratch(scratch -> {
            MemorySegment out = scratch.allocate(ADDRESS);
            MemorySegment buffer = scratch.allocateFrom(JAVA_BYTE, packed);
            check((byte) UcpNative.UCP_EP_RKEY_UNPACK.invokeExact(endpoint, buffer.address(), out.address()), "ucp_ep_rkey_unpack");
            return out.get(JAVA_LONG, 0);
        });
    }

    /**
     * Destroys a remote key: after every operation using it completed, before its endpoint closes.
     *
     * @param rkey the key.
     */
    public static void rkeyDestroy(long rkey)
    {
        run(() -> {
            UcpNative.UCP_RKEY_DESTROY.invokeExact(rkey);
        });
    }

    /**
     * Allocates a zeroed {@code ucp_request_param_t}.
     *
     * @param arena owner of the memory.
     * @return the parameter.
     */
    public static MemorySegment newRequestParam(Arena arena)
    {
        return arena.allocate(REQUEST_PARAM);
    }

    /**
     * Makes a request parameter carry a local memory handle, sparing UCX a registration lookup.
     *
     * @param param from {@link #newRequestParam}.
     * @param memh the handle of the local memory the next operations use.
     */
    public static void setMemoryHandle(MemorySegment param, long memh)
    {
        param.set(JAVA_INT, UcpLayouts.REQUEST_PARAM_OP_ATTR_MASK, OP_ATTR_FIELD_MEMH);
        param.set(JAVA_LONG, UcpLayouts.REQUEST_PARAM_MEMH, memh);
    }

    /**
     * Starts a one-sided put: {@code length} bytes from local {@code buffer} to the peer's
     * {@code remoteAddress}.
     *
     * @param endpoint the endpoint.
     * @param buffer local address.
     * @param length bytes.
     * @param remoteAddress peer address.
     * @param rkey the peer region's key on this endpoint.
     * @param param address of a request parameter.
     * @return a status pointer: 0 when done locally, an error, or a request.
     */
    public static long putNbx(long endpoint, long buffer, long length, long remoteAddress, long rkey, long param)
    {
        try {
            return (long) UcpNative.UCP_PUT_NBX.invokeExact(endpoint, buffer, length, remoteAddress, rkey, param);
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Starts a one-sided get: {@code length} bytes from the peer's {@code remoteAddress} into local
     * {@code buffer}.
     *
     * @param endpoint the endpoint.
     * @param buffer local address.
     * @param length bytes.
     * @param remoteAddress peer address.
     * @param rkey the peer region's key on this endpoint.
     * @param param address of a request parameter.
     * @return a status pointer: 0 when done, an error, or a request.
     */
    public static long getNbx(long endpoint, long buffer, long length, long remoteAddress, long rkey, long param)
    {
        try {
            return (long) UcpNative.UCP_GET_NBX.invokeExact(endpoint, buffer, length, remoteAddress, rkey, param);
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Starts a tagged send.
     *
     * @param endpoint the endpoint.
     * @param buffer the message; must stay untouched until the request completes.
     * @param length bytes.
     * @param tag the tag.
     * @param emptyParam a zeroed request parameter.
     * @return a status pointer: 0 when done, an error, or a request.
     */
    public static long tagSendNbx(long endpoint, MemorySegment buffer, long length, long tag, MemorySegment emptyParam)
    {
        try {
            return (long) UcpNative.UCP_TAG_SEND_NBX.invokeExact(endpoint, buffer.address(), length, tag, emptyParam.address());
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Takes the first unexpected tagged message matching {@code tag} under {@code mask}.
     *
     * @param worker the worker.
     * @param tag tag bits to match.
     * @param mask which bits must match.
     * @param info a {@code ucp_tag_recv_info_t} from {@link #newTagInfo}, filled on a match.
     * @return the message handle to pass to {@link #tagMsgRecvNbx}, or 0 when none waits.
     */
    public static long tagProbe(long worker, long tag, long mask, MemorySegment info)
    {
        try {
            return (long) UcpNative.UCP_TAG_PROBE_NB.invokeExact(worker, tag, mask, 1, info.address());
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Allocates a {@code ucp_tag_recv_info_t}.
     *
     * @param arena owner of the memory.
     * @return the structure.
     */
    public static MemorySegment newTagInfo(Arena arena)
    {
        return arena.allocate(TAG_RECV_INFO);
    }

    /**
     * Reads the sender's tag from a probe result.
     *
     * @param info filled by {@link #tagProbe}.
     * @return the tag.
     */
    public static long tagInfoSenderTag(MemorySegment info)
    {
        return info.get(JAVA_LONG, UcpLayouts.TAG_RECV_INFO_SENDER_TAG);
    }

    /**
     * Reads the message length from a probe result.
     *
     * @param info filled by {@link #tagProbe}.
     * @return bytes.
     */
    public static long tagInfoLength(MemorySegment info)
    {
        return info.get(JAVA_LONG, UcpLayouts.TAG_RECV_INFO_LENGTH);
    }

    /**
     * Receives a probed message.
     *
     * @param worker the worker.
     * @param buffer at least {@code length} bytes.
     * @param length the message length from the probe.
     * @param message from {@link #tagProbe}.
     * @param emptyParam a zeroed request parameter.
     * @return a status pointer: 0 when received, an error, or a request.
     */
    public static long tagMsgRecvNbx(long worker, MemorySegment buffer, long length, long message, MemorySegment emptyParam)
    {
        try {
            return (long) UcpNative.UCP_TAG_MSG_RECV_NBX.invokeExact(worker, buffer.address(), length, message, emptyParam.address());
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Polls a request.
     *
     * @param request a request pointer.
     * @return {@link #IN_PROGRESS}, {@link #OK} or an error status.
     */
    public static byte requestStatus(long request)
    {
        try {
            return (byte) UcpNative.UCP_REQUEST_CHECK_STATUS.invokeExact(request);
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Frees a request; allowed while it is in flight (completion is then seen through a flush).
     *
     * @param request a request pointer.
     */
    public static void requestFree(long request)
    {
        try {
            UcpNative.UCP_REQUEST_FREE.invokeExact(request);
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Tells whether a status pointer encodes an error ({@code UCS_PTR_IS_ERR}).
     *
     * @param statusPointer a value returned by an {@code _nbx} call.
     * @return true for an error.
     */
    public static boolean isError(long statusPointer)
    {
        return Long.compareUnsigned(statusPointer, ERR_LAST) >= 0;
    }

    /**
     * Extracts the status of an error pointer ({@code UCS_PTR_STATUS}).
     *
     * @param statusPointer a value for which {@link #isError} holds.
     * @return the status.
     */
    public static byte statusOf(long statusPointer)
    {
        return (byte) statusPointer;
    }

    /**
     * Returns UCX's description of a status.
     *
     * @param status a status.
     * @return the text, e.g. {@code Connection reset by remote peer}.
     */
    public static String statusString(byte status)
    {
        try {
            long text = (long) UcpNative.UCS_STATUS_STRING.invokeExact(status);
            return text == 0 ? "unknown status" : pointer(text, 256).getString(0);
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Builds the exception for a failed call.
     *
     * @param function the C function.
     * @param status what it returned.
     * @return {@code NATIVE_ERROR} naming both and UCX's status string.
     */
    public static KvBridgeException error(String function, byte status)
    {
        return new KvBridgeException(ErrorCode.NATIVE_ERROR, describeFailure(function, status));
    }

    /**
     * Describes a failed call without an error code prefix, for messages that wrap it.
     *
     * @param function the C function.
     * @param status what it returned.
     * @return e.g. {@code ucp_ep_flush_nbx failed: Connection reset by remote peer (ucs_status_t=-25)}.
     */
    public static String describeFailure(String function, byte status)
    {
        return function + " failed: " + statusString(status) + " (ucs_status_t=" + status + ")";
    }

    /** A call that needs native scratch memory for its parameters and results. */
    @FunctionalInterface
    private interface ScratchCall<T>
    {
        T call(Arena scratch) throws Throwable;
    }

    /** A call with nothing to allocate and nothing to return. */
    @FunctionalInterface
    private interface PlainCall
    {
        void call() throws Throwable;
    }

    // setup and teardown calls only: the lambda and the arena cost nothing next to UCX's work there
    private static <T> T withScratch(ScratchCall<T> call)
    {
        try (Arena scratch = Arena.ofConfined()) {
            return call.call(scratch);
        }
        catch (KvBridgeException e) {
            throw e;
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    private static void run(PlainCall call)
    {
        try {
            call.call();
        }
        catch (KvBridgeException e) {
            throw e;
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    private static void check(byte status, String function)
    {
        if (status != OK) {
            throw error(function, status);
        }
    }

    @SuppressWarnings("restricted")
    static MemorySegment pointer(long address, long length)
    {
        return MemorySegment.ofAddress(address).reinterpret(length);
    }

    private static AssertionError bug(Throwable e)
    {
        if (e instanceof Error error) {
            throw error;
        }
        return new AssertionError("native call failed unexpectedly: " + e, e);
    }

    // runs inside ucp_worker_progress on the owner thread; an exception escaping an upcall would
    // terminate the JVM, so none may leave
    @SuppressWarnings("unused")
    private static void onEndpointError(long token, long endpoint, byte status)
    {
        try {
            EndpointErrorListener listener = ERROR_LISTENERS.get(token);
            if (listener != null) {
                listener.endpointFailed(token, status);
            }
        }
        catch (Throwable e) {
            System.getLogger(Ucp.class.getName()).log(System.Logger.Level.ERROR, "endpoint error handler failed", e);
        }
    }

    /** Loads the libraries once; holds the first failure instead of rethrowing it on every use. */
    private static final class Loaded
    {
        static final String PROBLEM;
        static final boolean LIBRARIES_MISSING;
        static final MemorySegment ERROR_HANDLER_STUB;

        static {
            String problem = null;
            boolean missing = false;
            MemorySegment stub = MemorySegment.NULL;
            try {
                String arch = System.getProperty("os.arch");
                if (!System.getProperty("os.name").startsWith("Linux") || !(arch.equals("amd64") || arch.equals("aarch64"))) {
                    problem = "the UCX transport supports 64-bit Linux (amd64, aarch64), this JVM runs on "
                            + System.getProperty("os.name") + "/" + arch;
                }
                else if (!UcpNative.SIGNALS_LEFT_TO_JVM) {
                    problem = "could not clear UCX_ERROR_SIGNALS before loading UCX (setenv failed); UCX's signal handlers would crash the JVM";
                }
                else {
                    String version = version();
                    if (!supportedVersion(version)) {
                        problem = "UCX " + version + " is installed but kvbridge needs 1.13 or newer; install a newer libucx0";
                    }
                    else {
                        stub = errorHandlerStub();
                    }
                }
            }
            catch (UnsatisfiedLinkError | ExceptionInInitializerError | NoClassDefFoundError e) {
                Throwable cause = e instanceof ExceptionInInitializerError && e.getCause() != null ? e.getCause() : e;
                missing = true;
                problem = cause.getMessage() + "; install UCX 1.13 or newer (Debian/Ubuntu: apt-get install -y libucx0), or point -D"
                        + UcpNative.LIBRARY_DIR_PROPERTY + " at the directory holding libucp.so.0";
            }
            catch (IllegalCallerException e) {
                problem = "native access is denied: " + e.getMessage() + "; run java with --enable-native-access=" + moduleFlag();
            }
            PROBLEM = problem;
            LIBRARIES_MISSING = missing;
            ERROR_HANDLER_STUB = stub;
        }

        @SuppressWarnings("restricted")
        private static MemorySegment errorHandlerStub()
        {
            try {
                // void (*ucp_err_handler_cb_t)(void *arg, ucp_ep_h ep, ucs_status_t status)
                return Linker.nativeLinker().upcallStub(
                        MethodHandles.lookup().findStatic(Ucp.class, "onEndpointError", MethodType.methodType(void.class, long.class, long.class, byte.class)),
                        FunctionDescriptor.ofVoid(JAVA_LONG, JAVA_LONG, JAVA_BYTE), Arena.global());
            }
            catch (ReflectiveOperationException e) {
                throw new AssertionError(e);
            }
        }
    }

    /**
     * Returns the value {@code --enable-native-access} needs for this code.
     *
     * @return the module name, or {@code ALL-UNNAMED} on the class path.
     */
    public static String moduleFlag()
    {
        Module module = Ucp.class.getModule();
        return module.isNamed() ? module.getName() : "ALL-UNNAMED";
    }
}
