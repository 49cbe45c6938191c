package io.kvbridge.backend.cudaipc;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvbridge.backend.cudaipc.ffm.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;

/** The fake driver's test-only steering ({@code kvbfake_control}) and counters ({@code kvbfake_stat}). */
final class FakeCuda
{
    private static MethodHandle control;
    private static MethodHandle stat;

    private FakeCuda()
    {
    }

    private static synchronized void bind()
    {
        if (control == null) {
            if (CudaDriver.loadFailure().isPresent() || !CudaDriver.isFake()) {
                throw new IllegalStateException("the fake driver is not loaded: " + CudaDriver.loadFailure());
            }
            Linker linker = Linker.nativeLinker();
            control = linker.downcallHandle(CudaDriver.lookup().find("kvbfake_control").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
            stat = linker.downcallHandle(CudaDriver.lookup().find("kvbfake_stat").orElseThrow(), FunctionDescriptor.of(JAVA_LONG, ADDRESS));
        }
    }

    static void set(String key, long value)
    {
        bind();
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) control.invokeExact(arena.allocateFrom(key), value);
            if (rc != 0) {
                throw new IllegalArgumentException("unknown fake key " + key);
            }
        }
        catch (RuntimeException e) {
            throw e;
        }
        catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Puts every steering key back to its value at load: what a test changed does not reach the next. */
    static void reset()
    {
        set("reset", 0);
    }

    static long stat(String key)
    {
        bind();
        try (Arena arena = Arena.ofConfined()) {
            return (long) stat.invokeExact(arena.allocateFrom(key));
        }
        catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    static boolean loaded()
    {
        return CudaDriver.loadFailure().isEmpty() && CudaDriver.isFake();
    }
}
