package io.kvbridge.backend.ucx.ffm;

import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * How setup and teardown calls get native scratch memory for their parameters and results: a
 * confined arena per call. The lambda and the arena cost nothing next to UCX's work there; hot
 * paths never use this.
 */
final class Scratch
{
    private Scratch()
    {
    }

    /** A call that needs native scratch memory for its parameters and results. */
    @FunctionalInterface
    interface ScratchCall<T>
    {
        T call(Arena scratch) throws Throwable;
    }

    /** A call with nothing to allocate and nothing to return. */
    @FunctionalInterface
    interface PlainCall
    {
        void call() throws Throwable;
    }

    static <T> T with(ScratchCall<T> call)
    {
        try (Arena scratch = Arena.ofConfined()) {
            return call.call(scratch);
        }
        catch (KvBridgeException e) {
            throw e;
        }
        catch (Throwable e) {
            throw UcpStatus.bug(e);
        }
    }

    static void run(PlainCall call)
    {
        try {
            call.call();
        }
        catch (KvBridgeException e) {
            throw e;
        }
        catch (Throwable e) {
            throw UcpStatus.bug(e);
        }
    }

    @SuppressWarnings("restricted")
    static MemorySegment pointer(long address, long length)
    {
        return MemorySegment.ofAddress(address).reinterpret(length);
    }
}
