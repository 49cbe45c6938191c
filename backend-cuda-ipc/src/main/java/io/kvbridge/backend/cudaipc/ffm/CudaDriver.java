package io.kvbridge.backend.cudaipc.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * The CUDA driver API ({@code libcuda.so.1}, never the runtime) bound through FFM. The process holds
 * one driver, so every function is a {@code static final} handle bound when {@link Handles} is first
 * used, under the exported names {@code cuda.h} maps its macros to ({@code cuMemAlloc_v2},
 * {@code cuIpcOpenMemHandle_v2}, ...). Pointers, streams, events and allocation handles travel as
 * {@code long}; a call that writes results takes an out-segment and runs on a cold path.
 *
 * <p>{@link #loadFailure()} says, without throwing, why the library cannot be used: not found
 * (with the property that points at it) or lacking symbols (all named). Every wrapper returns the
 * raw {@code CUresult}; {@link #check} turns one into a typed error naming the function.
 *
 * <p>Threads: any, but every call that needs a context must run on a thread that made the primary
 * context current ({@link #cuCtxSetCurrent}): the transport's owner thread.
 */
public final class CudaDriver
{
    /** The transport name the library property and kill switch are keyed by. */
    public static final String TRANSPORT = "cuda-ipc";
    /** The driver library's soname. */
    public static final String SONAME = "libcuda.so.1";

    private CudaDriver()
    {
    }

    /** The library, found once; a failure is kept as text. */
    private static final class Library
    {
        static final SymbolLookup LOOKUP;
        static final String FAILURE;

        static {
            SymbolLookup lookup = null;
            String failure = null;
            try {
                lookup = NativeLibrary.load(TRANSPORT, SONAME);
            }
            catch (UnsatisfiedLinkError | IllegalCallerException e) {
                failure = e.getMessage();
            }
            LOOKUP = lookup;
            FAILURE = failure;
        }
    }

    private static final class Handles
    {
        private static final FunctionDescriptor I_ = FunctionDescriptor.of(JAVA_INT, JAVA_INT);
        private static final NativeLibrary.Binder BINDER = new NativeLibrary.Binder(SONAME, Library.LOOKUP,
                "an NVIDIA driver of CUDA 12.0 or newer");

        static final MethodHandle INIT = bind("cuInit", I_);
        static final MethodHandle DRIVER_GET_VERSION = bind("cuDriverGetVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle DEVICE_GET_COUNT = bind("cuDeviceGetCount", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle DEVICE_GET = bind("cuDeviceGet", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle DEVICE_GET_NAME = bind("cuDeviceGetName", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        static final MethodHandle DEVICE_GET_ATTRIBUTE = bind("cuDeviceGetAttribute", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        static final MethodHandle PRIMARY_CTX_RETAIN = bind("cuDevicePrimaryCtxRetain", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle PRIMARY_CTX_RELEASE = bind("cuDevicePrimaryCtxRelease_v2", I_);
        static final MethodHandle CTX_SET_CURRENT = bind("cuCtxSetCurrent", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle GET_ERROR_NAME = bind("cuGetErrorName", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        static final MethodHandle MEM_ALLOC = bind("cuMemAlloc_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        static final MethodHandle MEM_FREE = bind("cuMemFree_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle IPC_GET_MEM_HANDLE = bind("cuIpcGetMemHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        // the 64-byte handle is passed by value: FFM copies the struct as the SysV ABI wants (in memory)
        static final MethodHandle IPC_OPEN_MEM_HANDLE = bind("cuIpcOpenMemHandle_v2",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, CudaLayouts.IPC_MEM_HANDLE, JAVA_INT));
        static final MethodHandle IPC_CLOSE_MEM_HANDLE = bind("cuIpcCloseMemHandle", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle MEM_GET_ALLOCATION_GRANULARITY = bind("cuMemGetAllocationGranularity",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        static final MethodHandle MEM_CREATE = bind("cuMemCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG));
        static final MethodHandle MEM_RELEASE = bind("cuMemRelease", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle MEM_ADDRESS_RESERVE = bind("cuMemAddressReserve",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        static final MethodHandle MEM_ADDRESS_FREE = bind("cuMemAddressFree", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle MEM_MAP = bind("cuMemMap", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        static final MethodHandle MEM_UNMAP = bind("cuMemUnmap", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle MEM_SET_ACCESS = bind("cuMemSetAccess", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG));
        static final MethodHandle MEM_EXPORT = bind("cuMemExportToShareableHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_LONG));
        static final MethodHandle MEM_IMPORT = bind("cuMemImportFromShareableHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        static final MethodHandle MEM_RETAIN_ALLOCATION_HANDLE = bind("cuMemRetainAllocationHandle", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        static final MethodHandle MEM_HOST_REGISTER = bind("cuMemHostRegister_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
        static final MethodHandle MEM_HOST_UNREGISTER = bind("cuMemHostUnregister", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle POINTER_GET_ATTRIBUTE = bind("cuPointerGetAttribute", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG));
        static final MethodHandle STREAM_CREATE = bind("cuStreamCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle STREAM_DESTROY = bind("cuStreamDestroy_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle EVENT_CREATE = bind("cuEventCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle EVENT_DESTROY = bind("cuEventDestroy_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle EVENT_RECORD = bind("cuEventRecord", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle EVENT_QUERY = bind("cuEventQuery", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle MEMCPY_ASYNC = bind("cuMemcpyAsync", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        /** Present only in kvbridge's test fake of the driver. */
        static final boolean FAKE = Library.LOOKUP.find("kvbfake_control").isPresent();

        static {
            BINDER.finish();
        }

        private static MethodHandle bind(String symbol, FunctionDescriptor descriptor)
        {
            return BINDER.bind(symbol, descriptor);
        }
    }

    private static volatile String bindFailure;
    private static volatile boolean bound;

    /**
     * Loads and binds the driver once, never throwing.
     *
     * @return why it cannot be used, or empty.
     */
    public static synchronized Optional<String> loadFailure()
    {
        if (bound) {
            return Optional.empty();
        }
        if (bindFailure != null) {
            return Optional.of(bindFailure);
        }
        if (Library.FAILURE != null) {
            bindFailure = Library.FAILURE;
            return Optional.of(bindFailure);
        }
        try {
            if (Handles.INIT != null) {
                bound = true;
                return Optional.empty();
            }
            bindFailure = SONAME + " could not be bound";
        }
        catch (ExceptionInInitializerError e) {
            bindFailure = String.valueOf(e.getCause() == null ? e : e.getCause().getMessage());
        }
        catch (NoClassDefFoundError | IllegalCallerException e) {
            bindFailure = String.valueOf(e.getMessage());
        }
        return Optional.of(bindFailure);
    }

    /** @return true when the bound library is kvbridge's test fake; only after {@link #loadFailure()} is empty. */
    public static boolean isFake()
    {
        return Handles.FAKE;
    }

    /** @return the lookup of the loaded library, for the fake's test-only functions. */
    public static SymbolLookup lookup()
    {
        return Library.LOOKUP;
    }

    private static AssertionError bug(Throwable t)
    {
        return new AssertionError("a CUDA driver downcall failed in Java: " + t, t);
    }

    /**
     * Makes a status a typed error.
     *
     * @param status from a wrapper.
     * @param function the C function's name.
     * @param context what was being done, with values and advice, or null.
     * @throws KvBridgeException {@code NATIVE_ERROR} unless the status is {@code CUDA_SUCCESS}.
     */
    public static void check(int status, String function, String context)
    {
        if (status != CudaLayouts.CUDA_SUCCESS) {
            throw failure(ErrorCode.NATIVE_ERROR, status, function, context);
        }
    }

    /** @return the typed error for a status: {@code function returned N (CUDA_ERROR_X) while context}. */
    public static KvBridgeException failure(ErrorCode code, int status, String function, String context)
    {
        return NativeLibrary.failure(code, function, status, errorName(status), context);
    }

    /** @return the driver's name for a status, such as {@code CUDA_ERROR_NO_DEVICE}, or null. */
    public static String errorName(int status)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = (int) Handles.GET_ERROR_NAME.invokeExact(status, out);
            MemorySegment name = out.get(ADDRESS, 0);
            return rc != 0 || name.equals(MemorySegment.NULL) ? null : name.reinterpret(256).getString(0);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuInit(int flags)
    {
        try {
            return (int) Handles.INIT.invokeExact(flags);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /** Calls a function that writes one int through its first argument, with the given trailing ints. */
    private static int outInt(MethodHandle handle, int[] result, int... args)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            int rc = switch (args.length) {
                case 0 -> (int) handle.invokeExact(out);
                case 1 -> (int) handle.invokeExact(out, args[0]);
                case 2 -> (int) handle.invokeExact(out, args[0], args[1]);
                default -> throw new IllegalArgumentException("args.length=" + args.length);
            };
            result[0] = out.get(JAVA_INT, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuDriverGetVersion(int[] version)
    {
        return outInt(Handles.DRIVER_GET_VERSION, version);
    }

    public static int cuDeviceGetCount(int[] count)
    {
        return outInt(Handles.DEVICE_GET_COUNT, count);
    }

    public static int cuDeviceGet(int[] device, int ordinal)
    {
        return outInt(Handles.DEVICE_GET, device, ordinal);
    }

    public static int cuDeviceGetAttribute(int[] value, int attribute, int device)
    {
        return outInt(Handles.DEVICE_GET_ATTRIBUTE, value, attribute, device);
    }

    /** @return the device's name, or a status-bearing placeholder. */
    public static String cuDeviceGetName(int device)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment name = arena.allocate(256);
            int rc = (int) Handles.DEVICE_GET_NAME.invokeExact(name, 256, device);
            return rc == 0 ? name.getString(0) : "(cuDeviceGetName returned " + rc + ")";
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /** Calls a function that writes one 64-bit value through its first argument. */
    private static long outLong(MethodHandle handle, long[] result, Object... tail)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            Object[] args = new Object[tail.length + 1];
            args[0] = out;
            System.arraycopy(tail, 0, args, 1, tail.length);
            int rc = (int) handle.invokeWithArguments(args);
            result[0] = out.get(JAVA_LONG, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuDevicePrimaryCtxRetain(long[] context, int device)
    {
        return (int) outLong(Handles.PRIMARY_CTX_RETAIN, context, device);
    }

    public static int cuDevicePrimaryCtxRelease(int device)
    {
        try {
            return (int) Handles.PRIMARY_CTX_RELEASE.invokeExact(device);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuCtxSetCurrent(long context)
    {
        try {
            return (int) Handles.CTX_SET_CURRENT.invokeExact(context);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuMemAlloc(long[] pointer, long bytes)
    {
        return (int) outLong(Handles.MEM_ALLOC, pointer, bytes);
    }

    public static int cuMemFree(long pointer)
    {
        return callLong(Handles.MEM_FREE, pointer);
    }

    private static int callLong(MethodHandle handle, long value)
    {
        try {
            return (int) handle.invokeExact(value);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    private static int callLongLong(MethodHandle handle, long a, long b)
    {
        try {
            return (int) handle.invokeExact(a, b);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /** Writes the 64-byte legacy IPC handle of the allocation holding {@code pointer} into {@code handle}. */
    public static int cuIpcGetMemHandle(byte[] handle, long pointer)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(CudaLayouts.IPC_MEM_HANDLE);
            int rc = (int) Handles.IPC_GET_MEM_HANDLE.invokeExact(out, pointer);
            MemorySegment.copy(out, JAVA_BYTE_LAYOUT, 0, handle, 0, 64);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    private static final java.lang.foreign.ValueLayout.OfByte JAVA_BYTE_LAYOUT = java.lang.foreign.ValueLayout.JAVA_BYTE;

    /** Opens a peer's legacy IPC handle (64 bytes) in this process; writes the local pointer. */
    public static int cuIpcOpenMemHandle(long[] pointer, byte[] handle)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            MemorySegment value = arena.allocate(CudaLayouts.IPC_MEM_HANDLE);
            MemorySegment.copy(handle, 0, value, JAVA_BYTE_LAYOUT, 0, 64);
            int rc = (int) Handles.IPC_OPEN_MEM_HANDLE.invokeExact(out, value, CudaLayouts.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
            pointer[0] = out.get(JAVA_LONG, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuIpcCloseMemHandle(long pointer)
    {
        return callLong(Handles.IPC_CLOSE_MEM_HANDLE, pointer);
    }

    private static MemorySegment allocationProp(Arena arena, int device, boolean posixFd)
    {
        MemorySegment prop = arena.allocate(CudaLayouts.ALLOCATION_PROP);
        prop.set(JAVA_INT, 0, CudaLayouts.CU_MEM_ALLOCATION_TYPE_PINNED);
        prop.set(JAVA_INT, 4, posixFd ? CudaLayouts.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0);
        prop.set(JAVA_INT, 8, CudaLayouts.CU_MEM_LOCATION_TYPE_DEVICE);
        prop.set(JAVA_INT, 12, device);
        return prop;
    }

    public static int cuMemGetAllocationGranularity(long[] granularity, int device)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = (int) Handles.MEM_GET_ALLOCATION_GRANULARITY.invokeExact(out, allocationProp(arena, device, true),
                    CudaLayouts.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
            granularity[0] = out.get(JAVA_LONG, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /** Creates pinned device memory exportable as a POSIX file descriptor. */
    public static int cuMemCreate(long[] handle, long bytes, int device)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = (int) Handles.MEM_CREATE.invokeExact(out, bytes, allocationProp(arena, device, true), 0L);
            handle[0] = out.get(JAVA_LONG, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuMemRelease(long handle)
    {
        return callLong(Handles.MEM_RELEASE, handle);
    }

    public static int cuMemAddressReserve(long[] pointer, long bytes)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = (int) Handles.MEM_ADDRESS_RESERVE.invokeExact(out, bytes, 0L, 0L, 0L);
            pointer[0] = out.get(JAVA_LONG, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuMemAddressFree(long pointer, long bytes)
    {
        return callLongLong(Handles.MEM_ADDRESS_FREE, pointer, bytes);
    }

    public static int cuMemMap(long pointer, long bytes, long handle)
    {
        try {
            return (int) Handles.MEM_MAP.invokeExact(pointer, bytes, 0L, handle, 0L);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuMemUnmap(long pointer, long bytes)
    {
        return callLongLong(Handles.MEM_UNMAP, pointer, bytes);
    }

    /** Grants read and write access to a mapped range on one device. */
    public static int cuMemSetAccess(long pointer, long bytes, int device)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment desc = arena.allocate(CudaLayouts.ACCESS_DESC);
            desc.set(JAVA_INT, 0, CudaLayouts.CU_MEM_LOCATION_TYPE_DEVICE);
            desc.set(JAVA_INT, 4, device);
            desc.set(JAVA_INT, 8, CudaLayouts.CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
            return (int) Handles.MEM_SET_ACCESS.invokeExact(pointer, bytes, desc, 1L);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /** Exports an allocation as a new POSIX file descriptor, which the caller owns. */
    public static int cuMemExportToShareableHandle(int[] fd, long handle)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            out.set(JAVA_INT, 0, -1);
            int rc = (int) Handles.MEM_EXPORT.invokeExact(out, handle, CudaLayouts.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0L);
            fd[0] = out.get(JAVA_INT, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /** Imports an allocation from a file descriptor, which stays the caller's to close. */
    public static int cuMemImportFromShareableHandle(long[] handle, int fd)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = (int) Handles.MEM_IMPORT.invokeExact(out, (long) fd, CudaLayouts.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
            handle[0] = out.get(JAVA_LONG, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    /** Succeeds only for memory mapped with cuMemMap: how VMM memory is told from cuMemAlloc memory. */
    public static int cuMemRetainAllocationHandle(long[] handle, long pointer)
    {
        return (int) outLong(Handles.MEM_RETAIN_ALLOCATION_HANDLE, handle, pointer);
    }

    public static int cuMemHostRegister(long pointer, long bytes, int flags)
    {
        try {
            return (int) Handles.MEM_HOST_REGISTER.invokeExact(pointer, bytes, flags);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuMemHostUnregister(long pointer)
    {
        return callLong(Handles.MEM_HOST_UNREGISTER, pointer);
    }

    /** Reads one pointer attribute: 4-byte ones (memory type, ordinal) land in the low half. */
    public static int cuPointerGetAttribute(long[] value, int attribute, long pointer)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            out.set(JAVA_LONG, 0, 0L);
            int rc = (int) Handles.POINTER_GET_ATTRIBUTE.invokeExact(out, attribute, pointer);
            boolean word = attribute == CudaLayouts.CU_POINTER_ATTRIBUTE_MEMORY_TYPE || attribute == CudaLayouts.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
            value[0] = word ? out.get(JAVA_INT, 0) : out.get(JAVA_LONG, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuStreamCreate(long[] stream)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = (int) Handles.STREAM_CREATE.invokeExact(out, CudaLayouts.CU_STREAM_NON_BLOCKING);
            stream[0] = out.get(JAVA_LONG, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuStreamDestroy(long stream)
    {
        return callLong(Handles.STREAM_DESTROY, stream);
    }

    public static int cuEventCreate(long[] event)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = (int) Handles.EVENT_CREATE.invokeExact(out, CudaLayouts.CU_EVENT_DISABLE_TIMING);
            event[0] = out.get(JAVA_LONG, 0);
            return rc;
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }

    public static int cuEventDestroy(long event)
    {
        return callLong(Handles.EVENT_DESTROY, event);
    }

    /** Hot path: records an event after the work queued on a stream so far. */
    public static int cuEventRecord(long event, long stream)
    {
        return callLongLong(Handles.EVENT_RECORD, event, stream);
    }

    /** Hot path: {@code CUDA_SUCCESS} once the event is reached, {@code CUDA_ERROR_NOT_READY} before. */
    public static int cuEventQuery(long event)
    {
        return callLong(Handles.EVENT_QUERY, event);
    }

    /** Hot path: one asynchronous copy; the direction follows from the unified addresses. */
    public static int cuMemcpyAsync(long dst, long src, long bytes, long stream)
    {
        try {
            return (int) Handles.MEMCPY_ASYNC.invokeExact(dst, src, bytes, stream);
        }
        catch (Throwable t) {
            throw bug(t);
        }
    }
}
