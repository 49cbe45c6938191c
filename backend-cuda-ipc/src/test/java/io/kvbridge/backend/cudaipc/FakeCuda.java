package io.kvbridge.backend.cudaipc;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvbridge.backend.cudaipc.ffm.CudaDriver;
import io.kvbridge.testkit.NativeFakes;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;

/** The fake driver's test-only steering ({@code kvbfake_control}) and counters ({@code kvbfake_stat}). */
final class FakeCuda
{
    /** The system property the build sets to the fake driver's path. */
    static final String FAKE_PROPERTY = "kvbridge.cuda-ipc.test.fake";

    private static MethodHandle control;
    private static MethodHandle stat;

    private FakeCuda()
    {
    }

    private static synchronized void bind()
    {
        // a skip, not a failure, where the build skipped the fake (also in a tear-down after a skipped set-up)
        NativeFakes.require(FAKE_PROPERTY);
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

    /**
     * Whether the fake driver is the one loaded; skips the calling test, with the reason
     * {@link NativeFakes} gives, where the build skipped the fakes (no gcc).
     *
     * @return true when the fake is loaded.
     */
    static boolean loaded()
    {
        NativeFakes.require(FAKE_PROPERTY);
        return CudaDriver.loadFailure().isEmpty() && CudaDriver.isFake();
    }

    /**
     * Skips the calling test, with the reason {@link NativeFakes} gives, where the driver these tests
     * bind ({@value CudaIpcBackendFactory#LIBRARY_PROPERTY}) is the fake and the build skipped it; a
     * run against a real driver (the real-cuda profile) is not affected.
     */
    static void assumeBuiltWhereBound()
    {
        String fake = System.getProperty(FAKE_PROPERTY);
        if (fake != null && fake.equals(System.getProperty(CudaIpcBackendFactory.LIBRARY_PROPERTY))) {
            NativeFakes.require(FAKE_PROPERTY);
        }
    }

    /** {@return a factory that allows the fake driver, once {@link #assumeBuiltWhereBound()} passed} */
    static CudaIpcBackendFactory factory()
    {
        assumeBuiltWhereBound();
        return new CudaIpcBackendFactory(true);
    }
}
