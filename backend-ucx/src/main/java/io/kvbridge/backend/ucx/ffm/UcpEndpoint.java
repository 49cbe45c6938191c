package io.kvbridge.backend.ucx.ffm;

import static io.kvbridge.backend.ucx.ffm.UcpLayouts.EP_PARAMS;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.REQUEST_PARAM;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.util.Objects.requireNonNull;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.LoggerFactory;

/**
 * The endpoint side of UCP: creating endpoints with peer error handling, flushing and closing
 * them, remote keys, one-sided put/get and tagged sends. The only upcall of the transport is UCX's
 * endpoint error handler, which reaches the listener registered with the endpoint's token.
 *
 * <p>Every method that takes an endpoint or remote key must be called on the thread that owns the
 * endpoint's worker. The error listeners' map is the one field any thread touches.
 */
public final class UcpEndpoint
{
    private static final long EP_PARAM_FIELD_REMOTE_ADDRESS = 1L;
    private static final long EP_PARAM_FIELD_ERR_HANDLING_MODE = 1L << 1;
    private static final long EP_PARAM_FIELD_ERR_HANDLER = 1L << 2;
    private static final int ERR_HANDLING_MODE_PEER = 1;
    private static final int OP_ATTR_FIELD_FLAGS = 1 << 4;
    private static final int EP_CLOSE_FLAG_FORCE = 1;

    private static final Map<Long, EndpointErrorListener> ERROR_LISTENERS = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT_ENDPOINT_TOKEN = new AtomicLong(1);

    private UcpEndpoint()
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
         * @param status the UCX status, such as {@link UcpStatus#ERR_CONNECTION_RESET}.
         */
        void endpointFailed(long token, byte status);
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
            return Scratch.with(scratch -> {
                MemorySegment params = scratch.allocate(EP_PARAMS);
                params.set(JAVA_LONG, UcpLayouts.EP_PARAMS_FIELD_MASK,
                        EP_PARAM_FIELD_REMOTE_ADDRESS | EP_PARAM_FIELD_ERR_HANDLING_MODE | EP_PARAM_FIELD_ERR_HANDLER);
                params.set(ADDRESS, UcpLayouts.EP_PARAMS_ADDRESS, scratch.allocateFrom(JAVA_BYTE, remoteAddress));
                params.set(JAVA_INT, UcpLayouts.EP_PARAMS_ERR_MODE, ERR_HANDLING_MODE_PEER);
                params.set(ADDRESS, UcpLayouts.EP_PARAMS_ERR_HANDLER_CB, ErrorHandler.STUB);
                params.set(JAVA_LONG, UcpLayouts.EP_PARAMS_ERR_HANDLER_ARG, token);
                MemorySegment out = scratch.allocate(ADDRESS);
                UcpStatus.check((byte) UcpNative.UCP_EP_CREATE.invokeExact(worker, params.address(), out.address()), "ucp_ep_create");
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
     * with {@link UcpStatus#ERR_CANCELED}); flush mode completes outstanding operations first.
     *
     * @param endpoint the endpoint.
     * @param force true for {@code UCP_EP_CLOSE_FLAG_FORCE}.
     * @param token the endpoint's token; its listener is forgotten.
     * @return a status pointer: 0 when closed, an error, or a request to poll.
     */
    public static long epCloseNbx(long endpoint, boolean force, long token)
    {
        ERROR_LISTENERS.remove(token);
        return Scratch.with(scratch -> {
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
     * @param emptyParam a zeroed request parameter from {@link UcpWorker#newRequestParam}.
     * @return a status pointer: 0 when already flushed, an error, or a request to poll.
     */
    public static long epFlushNbx(long endpoint, MemorySegment emptyParam)
    {
        try {
            return (long) UcpNative.UCP_EP_FLUSH_NBX.invokeExact(endpoint, emptyParam.address());
        }
        catch (Throwable e) {
            throw UcpStatus.bug(e);
        }
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
        return Scratch.with(scratch -> {
            MemorySegment out = scratch.allocate(ADDRESS);
            MemorySegment buffer = scratch.allocateFrom(JAVA_BYTE, packed);
            UcpStatus.check((byte) UcpNative.UCP_EP_RKEY_UNPACK.invokeExact(endpoint, buffer.address(), out.address()), "ucp_ep_rkey_unpack");
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
        Scratch.run(() -> {
            UcpNative.UCP_RKEY_DESTROY.invokeExact(rkey);
        });
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
            throw UcpStatus.bug(e);
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
            throw UcpStatus.bug(e);
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
            throw UcpStatus.bug(e);
        }
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
            LoggerFactory.getLogger(UcpEndpoint.class).error("endpoint error handler failed", e);
        }
    }

    /** The upcall stub UCX calls on an endpoint error; made when the first endpoint is created, once UCX loaded. */
    private static final class ErrorHandler
    {
        static final MemorySegment STUB = stub();

        @SuppressWarnings("restricted")
        private static MemorySegment stub()
        {
            try {
                // void (*ucp_err_handler_cb_t)(void *arg, ucp_ep_h ep, ucs_status_t status)
                return Linker.nativeLinker().upcallStub(
                        MethodHandles.lookup().findStatic(UcpEndpoint.class, "onEndpointError", MethodType.methodType(void.class, long.class, long.class, byte.class)),
                        FunctionDescriptor.ofVoid(JAVA_LONG, JAVA_LONG, JAVA_BYTE), Arena.global());
            }
            catch (ReflectiveOperationException e) {
                throw new AssertionError(e);
            }
        }
    }
}
