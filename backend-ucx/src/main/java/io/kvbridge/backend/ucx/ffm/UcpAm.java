package io.kvbridge.backend.ucx.ffm;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.util.Objects.requireNonNull;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteOrder;

/**
 * UCP active messages: installing a receive handler (a Java upcall), sending with a header,
 * receiving rendezvous data into place, and reading headers and received bytes at raw addresses
 * without wrapping each message in a segment.
 *
 * <p>Every method that takes a worker or endpoint must be called on the thread that owns the
 * worker; handlers run inside {@code ucp_worker_progress} on that thread.
 */
public final class UcpAm
{
    /** {@code UCP_AM_RECV_ATTR_FIELD_REPLY_EP}: the message carries an endpoint to answer on. */
    public static final long RECV_ATTR_FIELD_REPLY_EP = 1L;
    /** {@code UCP_AM_RECV_ATTR_FLAG_DATA}: eager data that may be kept past the handler. */
    public static final long RECV_ATTR_FLAG_DATA = 1L << 16;
    /** {@code UCP_AM_RECV_ATTR_FLAG_RNDV}: the data is a descriptor to receive with {@link #recvDataNbx}. */
    public static final long RECV_ATTR_FLAG_RNDV = 1L << 17;
    /** {@code UCP_AM_SEND_FLAG_REPLY}: the receiver gets an endpoint back to this worker. */
    public static final int SEND_FLAG_REPLY = 1;
    /** {@code UCP_AM_SEND_FLAG_EAGER}: never rendezvous, so the data reaches the handler itself. */
    public static final int SEND_FLAG_EAGER = 1 << 1;
    /** {@code UCP_AM_SEND_FLAG_RNDV}: always rendezvous, so the receiver fetches the data when it asks. */
    public static final int SEND_FLAG_RNDV = 1 << 2;

    private static final long HANDLER_FIELD_ID = 1L;
    private static final long HANDLER_FIELD_FLAGS = 1L << 1;
    private static final long HANDLER_FIELD_CB = 1L << 2;
    private static final long HANDLER_FIELD_ARG = 1L << 3;
    private static final int AM_FLAG_WHOLE_MSG = 1;
    private static final int OP_ATTR_FIELD_FLAGS = 1 << 4;
    private static final int OP_ATTR_FIELD_MEMH = 1 << 8;

    /** Active message ids are 16 bits on the wire. */
    public static final int MAX_ID = 0xFFFF;
    // every address of the process: reads and copies at raw addresses without a segment per message
    @SuppressWarnings("restricted")
    private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private UcpAm()
    {
    }

    /** Runs, on the owner thread inside {@code ucp_worker_progress}, for every active message of the ids it was installed for. */
    @FunctionalInterface
    public interface Handler
    {
        /**
         * Handles one message; must never throw (an exception leaving an upcall ends the JVM) and must
         * not call {@code ucp_worker_progress}.
         *
         * @param id the message id the handler was installed with.
         * @param header address of the sender's header; untrusted.
         * @param headerLength its length.
         * @param data the eager data, or the rendezvous descriptor.
         * @param length the data's length.
         * @param param address of the {@code ucp_am_recv_param_t}.
         * @return a {@code ucs_status_t}: {@link UcpStatus#OK}, or for rendezvous data an error that
         *     fails the sender's send.
         */
        byte received(long id, long header, long headerLength, long data, long length, long param);
    }

    /**
     * Makes the upcall stub for a handler; once per instance, freed with the arena after the worker.
     *
     * @param handler the handler.
     * @param arena owns the stub; closed only after the worker is destroyed.
     * @return the stub's address, for {@link #setHandler}.
     */
    @SuppressWarnings("restricted")
    public static MemorySegment stub(Handler handler, Arena arena)
    {
        requireNonNull(handler, "handler is null");
        try {
            MethodHandle target = MethodHandles.lookup().findVirtual(Handler.class, "received",
                    MethodType.methodType(byte.class, long.class, long.class, long.class, long.class, long.class, long.class)).bindTo(handler);
            // ucs_status_t (*)(void *arg, const void *header, size_t header_length, void *data, size_t length, const ucp_am_recv_param_t *param)
            return Linker.nativeLinker().upcallStub(target, FunctionDescriptor.of(JAVA_BYTE, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
                    arena);
        }
        catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * Installs a stub as the handler of one message id; its {@code arg} is the id.
     *
     * @param worker the worker.
     * @param id the message id.
     * @param stub from {@link #stub}.
     */
    public static void setHandler(long worker, int id, MemorySegment stub)
    {
        setHandlers(worker, id, id, stub);
    }

    /**
     * Installs a stub as the handler of every message id from {@code firstId} to {@code lastId}, the
     * last first, so that UCX sizes its handler table once; each handler's {@code arg} is its id.
     *
     * @param worker the worker.
     * @param firstId the lowest id.
     * @param lastId the highest id, at most {@link #MAX_ID}.
     * @param stub from {@link #stub}.
     */
    public static void setHandlers(long worker, int firstId, int lastId, MemorySegment stub)
    {
        Scratch.run(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment param = arena.allocate(UcpLayouts.AM_HANDLER_PARAM);
                param.set(JAVA_LONG, UcpLayouts.AM_HANDLER_PARAM_FIELD_MASK, HANDLER_FIELD_ID | HANDLER_FIELD_FLAGS | HANDLER_FIELD_CB | HANDLER_FIELD_ARG);
                param.set(JAVA_INT, UcpLayouts.AM_HANDLER_PARAM_FLAGS, AM_FLAG_WHOLE_MSG);
                param.set(JAVA_LONG, UcpLayouts.AM_HANDLER_PARAM_CB, stub.address());
                for (int id = lastId; id >= firstId; id--) {
                    param.set(JAVA_INT, UcpLayouts.AM_HANDLER_PARAM_ID, id);
                    param.set(JAVA_LONG, UcpLayouts.AM_HANDLER_PARAM_ARG, id);
                    UcpStatus.check((byte) UcpNative.UCP_WORKER_SET_AM_RECV_HANDLER.invokeExact(worker, param.address()), "ucp_worker_set_am_recv_handler");
                }
            }
        });
    }

    /**
     * Sets the send flags and local memory handle of a request parameter for {@link #sendNbx}.
     *
     * @param param from {@link UcpWorker#newRequestParam}.
     * @param flags {@code SEND_FLAG_*} bits.
     * @param memh the local memory's handle, or 0 to let UCX find it.
     */
    public static void setSend(MemorySegment param, int flags, long memh)
    {
        param.set(JAVA_INT, UcpLayouts.REQUEST_PARAM_OP_ATTR_MASK, OP_ATTR_FIELD_FLAGS | (memh != 0 ? OP_ATTR_FIELD_MEMH : 0));
        param.set(JAVA_INT, UcpLayouts.REQUEST_PARAM_FLAGS, flags);
        param.set(JAVA_LONG, UcpLayouts.REQUEST_PARAM_MEMH, memh);
    }

    /**
     * Sends an active message. The header and data must stay untouched until the request completes.
     *
     * @param endpoint the endpoint.
     * @param id the message id.
     * @param header address of the header.
     * @param headerLength its length.
     * @param data address of the data.
     * @param length its length.
     * @param param address of a request parameter from {@link #setSend}.
     * @return a status pointer: 0 when done locally, an error, or a request.
     */
    public static long sendNbx(long endpoint, int id, long header, long headerLength, long data, long length, long param)
    {
        try {
            return (long) UcpNative.UCP_AM_SEND_NBX.invokeExact(endpoint, id, header, headerLength, data, length, param);
        }
        catch (Throwable e) {
            throw UcpStatus.bug(e);
        }
    }

    /**
     * Receives rendezvous data straight into place; UCX owns the descriptor afterwards.
     *
     * @param worker the worker.
     * @param descriptor the {@code data} a handler was given with {@link #RECV_ATTR_FLAG_RNDV}.
     * @param buffer where the bytes go.
     * @param length how many.
     * @param emptyParam a zeroed request parameter.
     * @return a status pointer: 0 when received, an error, or a request.
     */
    public static long recvDataNbx(long worker, long descriptor, long buffer, long length, MemorySegment emptyParam)
    {
        try {
            return (long) UcpNative.UCP_AM_RECV_DATA_NBX.invokeExact(worker, descriptor, buffer, length, emptyParam.address());
        }
        catch (Throwable e) {
            throw UcpStatus.bug(e);
        }
    }

    /**
     * Releases data a handler kept by returning {@code UCS_INPROGRESS}.
     *
     * @param worker the worker.
     * @param data the handler's {@code data}.
     */
    public static void dataRelease(long worker, long data)
    {
        try {
            UcpNative.UCP_AM_DATA_RELEASE.invokeExact(worker, data);
        }
        catch (Throwable e) {
            throw UcpStatus.bug(e);
        }
    }

    /**
     * {@return the {@code recv_attr} of a receive parameter}
     *
     * @param param address of the {@code ucp_am_recv_param_t}.
     */
    public static long recvAttr(long param)
    {
        return ALL.get(JAVA_LONG, param + UcpLayouts.AM_RECV_PARAM_RECV_ATTR);
    }

    /**
     * {@return the reply endpoint of a receive parameter, or 0 when the sender asked for none}
     *
     * @param param address of the {@code ucp_am_recv_param_t}.
     */
    public static long replyEndpoint(long param)
    {
        return (recvAttr(param) & RECV_ATTR_FIELD_REPLY_EP) != 0 ? ALL.get(JAVA_LONG, param + UcpLayouts.AM_RECV_PARAM_REPLY_EP) : 0;
    }

    /**
     * {@return the little-endian long at an address}
     *
     * @param address where.
     */
    public static long getLong(long address)
    {
        return ALL.get(LONG, address);
    }

    /**
     * {@return the little-endian int at an address}
     *
     * @param address where.
     */
    public static int getInt(long address)
    {
        return ALL.get(INT, address);
    }

    /**
     * {@return the byte at an address}
     *
     * @param address where.
     */
    public static byte getByte(long address)
    {
        return ALL.get(JAVA_BYTE, address);
    }

    /**
     * Copies bytes between raw addresses.
     *
     * @param from source.
     * @param to destination.
     * @param length bytes.
     */
    public static void copy(long from, long to, long length)
    {
        MemorySegment.copy(ALL, from, ALL, to, length);
    }

    /**
     * Copies bytes from a raw address into an array.
     *
     * @param from source.
     * @param to destination array.
     * @param length bytes.
     */
    public static void copy(long from, byte[] to, int length)
    {
        MemorySegment.copy(ALL, JAVA_BYTE, from, to, 0, length);
    }

    /**
     * Writes a little-endian long into a segment.
     *
     * @param segment the segment.
     * @param offset where.
     * @param value the value.
     */
    public static void putLong(MemorySegment segment, long offset, long value)
    {
        segment.set(LONG, offset, value);
    }

    /**
     * Writes a little-endian int into a segment.
     *
     * @param segment the segment.
     * @param offset where.
     * @param value the value.
     */
    public static void putInt(MemorySegment segment, long offset, int value)
    {
        segment.set(INT, offset, value);
    }
}
