package io.kvbridge.backend.ucx.ffm;

import static io.kvbridge.backend.ucx.ffm.UcpLayouts.REQUEST_PARAM;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.TAG_RECV_INFO;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.WORKER_PARAMS;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The worker side of UCP: creating and destroying a worker, progressing, arming and flushing it,
 * receiving tagged messages, and polling and freeing requests. Handles are {@code long} addresses;
 * the calls that run per transfer or per round of the owner loop allocate nothing.
 *
 * <p>Every method that takes a worker or request must be called on the thread that owns the worker
 * (workers are created in {@code UCS_THREAD_MODE_SINGLE}).
 */
public final class UcpWorker
{
    private static final long WORKER_PARAM_FIELD_THREAD_MODE = 1L;
    private static final long WORKER_PARAM_FIELD_NAME = 1L << 6;
    private static final int THREAD_MODE_SINGLE = 0;
    private static final int OP_ATTR_FIELD_MEMH = 1 << 8;

    private UcpWorker()
    {
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
        return Scratch.with(scratch -> {
            MemorySegment params = scratch.allocate(WORKER_PARAMS);
            params.set(JAVA_LONG, UcpLayouts.WORKER_PARAMS_FIELD_MASK, WORKER_PARAM_FIELD_THREAD_MODE | WORKER_PARAM_FIELD_NAME);
            params.set(JAVA_INT, UcpLayouts.WORKER_PARAMS_THREAD_MODE, THREAD_MODE_SINGLE);
            params.set(ADDRESS, UcpLayouts.WORKER_PARAMS_NAME, scratch.allocateFrom(name));
            MemorySegment out = scratch.allocate(ADDRESS);
            UcpStatus.check((byte) UcpNative.UCP_WORKER_CREATE.invokeExact(context, params.address(), out.address()), "ucp_worker_create");
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
        Scratch.run(() -> {
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
        return Scratch.with(scratch -> {
            MemorySegment addressOut = scratch.allocate(ADDRESS);
            MemorySegment lengthOut = scratch.allocate(JAVA_LONG);
            UcpStatus.check((byte) UcpNative.UCP_WORKER_GET_ADDRESS.invokeExact(worker, addressOut.address(), lengthOut.address()), "ucp_worker_get_address");
            long address = addressOut.get(JAVA_LONG, 0);
            try {
                return Scratch.pointer(address, lengthOut.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
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
        return Scratch.with(scratch -> {
            MemorySegment out = scratch.allocate(JAVA_INT);
            UcpStatus.check((byte) UcpNative.UCP_WORKER_GET_EFD.invokeExact(worker, out.address()), "ucp_worker_get_efd");
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
            throw UcpStatus.bug(e);
        }
        if (status == UcpStatus.OK) {
            return true;
        }
        if (status == UcpStatus.ERR_BUSY) {
            return false;
        }
        throw UcpStatus.error("ucp_worker_arm", status);
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
            throw UcpStatus.bug(e);
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
            throw UcpStatus.bug(e);
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
            throw UcpStatus.bug(e);
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
            throw UcpStatus.bug(e);
        }
    }

    /**
     * Polls a request.
     *
     * @param request a request pointer.
     * @return {@link UcpStatus#IN_PROGRESS}, {@link UcpStatus#OK} or an error status.
     */
    public static byte requestStatus(long request)
    {
        try {
            return (byte) UcpNative.UCP_REQUEST_CHECK_STATUS.invokeExact(request);
        }
        catch (Throwable e) {
            throw UcpStatus.bug(e);
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
            throw UcpStatus.bug(e);
        }
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
}
