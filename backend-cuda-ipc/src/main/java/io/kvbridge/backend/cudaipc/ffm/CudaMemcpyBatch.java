package io.kvbridge.backend.cudaipc.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The driver's batch copy, {@code cuMemcpyBatchAsync}, found through {@code cuGetProcAddress} (the
 * driver's own way to pick the versioned entry point) rather than by symbol name, so that one
 * lookup answers which ABI the function has: CUDA 13.0 made {@code cuMemcpyBatchAsync_v2} (eight
 * arguments), CUDA 12.8 and 12.9 have the first version with a {@code size_t *failIdx} before the
 * stream. Drivers older than 12.8 have neither; the transport then issues one
 * {@code cuMemcpyAsync} per run.
 *
 * <p>Threads: {@link #find} and {@link #call} run on the owner thread; {@link #call} is the hot path
 * and allocates nothing.
 */
public final class CudaMemcpyBatch
{
    /** The first CUDA version with the batch call (its failIdx ABI). */
    public static final int FIRST_VERSION = 12080;
    /** The CUDA version whose ABI ({@code _v2}, no failIdx) is asked for on drivers of 13.0 or newer. */
    public static final int V2_VERSION = 13000;

    private CudaMemcpyBatch()
    {
    }

    /**
     * Where the batch call is and which ABI it has.
     *
     * @param function the entry point, or {@link MemorySegment#NULL} when the driver has none.
     * @param abiVersion the CUDA version asked for ({@value #V2_VERSION}: eight arguments; below it:
     *     nine, with failIdx); 0 when absent.
     * @param detail what was found, for {@code probe()} details and logs.
     */
    public record EntryPoint(MemorySegment function, int abiVersion, String detail)
    {
        /** @return true when the driver has the call. */
        public boolean present()
        {
            return !function.equals(MemorySegment.NULL);
        }

        /** @return true when the call takes a failIdx before the stream (CUDA 12.8/12.9). */
        public boolean takesFailIndex()
        {
            return abiVersion < V2_VERSION;
        }
    }

    private static final class Handles
    {
        static final Linker LINKER = Linker.nativeLinker();
        static final MethodHandle GET_PROC_ADDRESS = CudaDriver.lookup().find("cuGetProcAddress_v2")
                .map(symbol -> LINKER.downcallHandle(symbol, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS)))
                .orElse(null);
        // the target address is the handle's first argument: one handle per ABI, whatever the driver returns
        static final MethodHandle BATCH_V2 = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS,
                JAVA_LONG, JAVA_LONG));
        static final MethodHandle BATCH_V1 = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS,
                JAVA_LONG, ADDRESS, JAVA_LONG));
    }

    /**
     * Asks the driver for its batch call; never throws for a driver that lacks it.
     *
     * @param driverVersion from {@code cuDriverGetVersion}.
     * @return the entry point, or an absent one saying why.
     */
    public static EntryPoint find(int driverVersion)
    {
        String fallback = "; one cuMemcpyAsync per coalesced run";
        if (driverVersion <= 0) {
            return absent("none: the driver's version is unknown (cuDriverGetVersion failed)" + fallback);
        }
        if (driverVersion < FIRST_VERSION) {
            return absent("none: the driver supports CUDA " + version(driverVersion) + ", the batch call came with " + version(FIRST_VERSION) + fallback);
        }
        if (Handles.GET_PROC_ADDRESS == null) {
            return absent("none: the driver does not export cuGetProcAddress_v2" + fallback);
        }
        int requested = Math.min(driverVersion, V2_VERSION);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment function = arena.allocate(ADDRESS);
            MemorySegment status = arena.allocate(JAVA_INT);
            status.set(JAVA_INT, 0, -1);
            int rc = (int) Handles.GET_PROC_ADDRESS.invokeExact(arena.allocateFrom("cuMemcpyBatchAsync"), function, requested,
                    (long) CudaLayouts.CU_GET_PROC_ADDRESS_DEFAULT, status);
            MemorySegment address = function.get(ADDRESS, 0);
            int found = status.get(JAVA_INT, 0);
            if (rc != 0 || found != CudaLayouts.CU_GET_PROC_ADDRESS_SUCCESS || address.equals(MemorySegment.NULL)) {
                return absent("none: cuGetProcAddress(cuMemcpyBatchAsync, " + requested + ") returned " + rc + " (" + CudaDriver.errorName(rc)
                        + "), symbolStatus " + statusName(found) + fallback);
            }
            String name = requested >= V2_VERSION ? "cuMemcpyBatchAsync_v2 (CUDA 13.0 ABI)" : "cuMemcpyBatchAsync (CUDA 12.8 ABI, with failIdx)";
            return new EntryPoint(address, requested, name + " from cuGetProcAddress for " + requested);
        }
        catch (Throwable t) {
            throw new AssertionError("a CUDA driver downcall failed in Java: " + t, t);
        }
    }

    private static EntryPoint absent(String detail)
    {
        return new EntryPoint(MemorySegment.NULL, 0, detail);
    }

    private static String version(int version)
    {
        return version / 1000 + "." + version % 1000 / 10;
    }

    private static String statusName(int status)
    {
        return switch (status) {
            case CudaLayouts.CU_GET_PROC_ADDRESS_SUCCESS -> "SUCCESS";
            case CudaLayouts.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND -> "SYMBOL_NOT_FOUND";
            case CudaLayouts.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT -> "VERSION_NOT_SUFFICIENT";
            default -> Integer.toString(status);
        };
    }

    /**
     * Hot path: queues {@code count} copies on a stream as one batch.
     *
     * @param entry a present entry point.
     * @param dsts {@code count} destination addresses.
     * @param srcs {@code count} source addresses.
     * @param sizes {@code count} byte counts.
     * @param attributes {@code attributeCount} {@code CUmemcpyAttributes}.
     * @param attributeIndices the first copy each attribute applies to; the first is 0.
     * @param failIndex where a 12.8 driver writes the failing copy's index; unused by the _v2 ABI.
     * @return the {@code CUresult}.
     */
    public static int call(EntryPoint entry, MemorySegment dsts, MemorySegment srcs, MemorySegment sizes, long count, MemorySegment attributes,
            MemorySegment attributeIndices, long attributeCount, MemorySegment failIndex, long stream)
    {
        try {
            if (entry.takesFailIndex()) {
                return (int) Handles.BATCH_V1.invokeExact(entry.function(), dsts, srcs, sizes, count, attributes, attributeIndices, attributeCount, failIndex,
                        stream);
            }
            return (int) Handles.BATCH_V2.invokeExact(entry.function(), dsts, srcs, sizes, count, attributes, attributeIndices, attributeCount, stream);
        }
        catch (Throwable t) {
            throw new AssertionError("a CUDA driver downcall failed in Java: " + t, t);
        }
    }
}
