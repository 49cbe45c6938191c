package io.kvbridge.transport.libc;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Binds the C library's functions for this package: those that report failure through
 * {@code errno} capture it ({@link Errno}); a function this C library lacks (a Linux-only one
 * elsewhere) is bound to a handle that throws {@link UnsatisfiedLinkError} naming it when called,
 * so one missing symbol does not take every other call down with it.
 */
final class Downcalls
{
    private static final Linker LINKER = Linker.nativeLinker();

    private Downcalls()
    {
    }

    /** Binds a function that sets {@code errno} on failure: its handle takes the capture segment first. */
    static MethodHandle capturing(String name, FunctionDescriptor descriptor, Linker.Option... options)
    {
        Linker.Option[] all = new Linker.Option[options.length + 1];
        all[0] = Errno.CAPTURE_ERRNO;
        System.arraycopy(options, 0, all, 1, options.length);
        return bind(name, descriptor, descriptor.toMethodType().insertParameterTypes(0, MemorySegment.class), all);
    }

    /** Binds a function that cannot fail, or reports failure in its result alone. */
    static MethodHandle plain(String name, FunctionDescriptor descriptor)
    {
        return bind(name, descriptor, descriptor.toMethodType());
    }

    @SuppressWarnings("restricted")
    private static MethodHandle bind(String name, FunctionDescriptor descriptor, MethodType type, Linker.Option... options)
    {
        return LINKER.defaultLookup().find(name)
                .map(symbol -> LINKER.downcallHandle(symbol, descriptor, options))
                .orElseGet(() -> missing(name, type));
    }

    private static MethodHandle missing(String name, MethodType type)
    {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("the C library lacks " + name + "(); kvbridge needs Linux with glibc 2.27 or newer for it");
        MethodHandle thrower = MethodHandles.throwException(type.returnType(), UnsatisfiedLinkError.class).bindTo(error);
        return MethodHandles.dropArguments(thrower, 0, type.parameterList());
    }

    /** Passes on what a downcall threw: only unchecked throwables can come out of one. */
    static RuntimeException unexpected(Throwable t)
    {
        if (t instanceof RuntimeException e) {
            return e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException("a C library call threw " + t, t);
    }
}
